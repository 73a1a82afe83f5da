"""Confinement: every path a file tool touches stays inside one root, and out of Lore's state.

The root is the chosen project, or the agent workspace when there is none. A path the
model sends is joined to the root and fully resolved (`..` and symlinks followed), and
must land inside it: `../x`, `/etc/passwd` and a link pointing out are all refused.
Lore's own state (the database, sessions, config, log, input history, token files, the
workspace's archive and version history) is refused too, even when the root contains it.

Resolving first and opening later leaves a gap in which a folder could be swapped for a
symlink. So nothing is opened by its full path: each folder of the resolved path is
opened relative to the one before with O_NOFOLLOW, and so is the file itself; a link
that appeared since the check makes the open fail instead of being followed.

A hard link is a second name for the same file, so no path check can see one. An opened
file that has more than one name is compared, by inode, with every file under the home
the tools may not read by its own path (the state above, and anything outside the
root): a link to any of them is refused. A file with one name cannot be such a link and
costs nothing extra; the home is walked at most once per tool call.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from lore.errors import ToolError

__all__ = ["STATE_PATTERNS", "WORKSPACE_STATE", "Confinement", "Located"]

# Lore's files at the top of LORE_HOME: never readable or writable through a tool.
STATE_PATTERNS = (
    "lore.db*",
    "sessions",
    "config.toml",
    "lore.log*",
    "input_history",
    "*token*",
    "*.lock",
)
# The agent workspace's archive (history, notes, cursors) and Dream's version history.
WORKSPACE_STATE = ("memory", ".git")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Located:
    """A checked path: where it really is, and the same relative to the root."""

    path: Path  # absolute, symlinks resolved
    rel: PurePosixPath  # relative to the root; "." for the root itself

    @property
    def shown(self) -> str:
        return str(self.rel)


class Confinement:
    def __init__(self, root: Path, *, home: Path, workspace: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self.home = Path(os.path.realpath(home))
        self.workspace = Path(os.path.realpath(workspace))

    # -- checking ------------------------------------------------------------------------

    def locate(self, path: str) -> Located:
        """Resolve `path` (relative to the root, or absolute inside it) or refuse it."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("'path' is required: a path relative to the project folder")
        if "\x00" in path:
            raise ToolError("the path contains a NUL character")
        if path.startswith("~"):
            raise ToolError(f"{path!r}: '~' is not expanded; give a path inside {self.root}")
        joined = Path(path) if Path(path).is_absolute() else self.root / path
        real = Path(os.path.realpath(joined))
        if real != self.root and self.root not in real.parents:
            raise ToolError(
                f"{path!r} is outside the project folder {self.root}; "
                "tools only work inside it (no '..', absolute paths or links out)"
            )
        if self.is_state(real):
            raise ToolError(f"{path!r} is Lore's own state; no tool may read or change it")
        rel = real.relative_to(self.root)
        return Located(real, PurePosixPath(rel.as_posix()) if rel.parts else PurePosixPath("."))

    def is_state(self, real: Path) -> bool:
        """Whether a resolved path is (inside) one of Lore's state files or folders."""
        for base, patterns in ((self.home, STATE_PATTERNS), (self.workspace, WORKSPACE_STATE)):
            if real == base or base not in real.parents:
                continue
            top = real.relative_to(base).parts[0]
            if any(fnmatch.fnmatchcase(top, pattern) for pattern in patterns):
                return True
        return False

    def near_state(self, real: Path) -> bool:
        """Whether anything at or below `real` could be Lore's state (it holds, or lies
        inside, Lore's home or the agent workspace)."""
        return any(
            real == base or real in base.parents or base in real.parents
            for base in (self.home, self.workspace)
        )

    def links_to_home(self, info: os.stat_result) -> bool:
        """Whether the opened file `info` is a hard link to a file under the home that no
        tool may read by its own name."""
        return info.st_nlink > 1 and (info.st_dev, info.st_ino) in self._guarded_inodes

    @cached_property
    def _guarded_inodes(self) -> frozenset[tuple[int, int]]:
        # Built once per tool call, and only when a file with several names is opened.
        found = set()
        for folder, _dirs, files in os.walk(self.home):
            for name in files:
                path = Path(folder) / name
                try:
                    info = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
                    continue
                readable = (path == self.root or self.root in path.parents) and not (
                    self.is_state(path)
                )
                if not readable:
                    found.add((info.st_dev, info.st_ino))
        return frozenset(found)

    # -- opening without following links -----------------------------------------------------

    @contextmanager
    def directory(self, rel: PurePosixPath, *, create: bool = False) -> Iterator[int]:
        """An open descriptor of the folder `rel`, reached one folder at a time."""
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise ToolError(
                f"the folder {self.root} is gone or unreadable ({exc.strerror})"
            ) from exc
        try:
            for part in rel.parts:
                if part == ".":
                    continue
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise ToolError(f"{rel} does not exist") from None
                    os.mkdir(part, dir_fd=fd)
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _swapped(rel, exc) from exc
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def read_bytes(self, located: Located, limit: int) -> tuple[bytes, int]:
        """Up to `limit` bytes of a regular file, and its full size."""
        with self.open_file(located) as (fd, size):
            chunks: list[bytes] = []
            left = limit
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 16))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks), size

    @contextmanager
    def open_file(self, located: Located) -> Iterator[tuple[int, int]]:
        """An open descriptor of a regular file and its size."""
        if located.rel == PurePosixPath("."):
            raise ToolError(f"{located.path} is a folder, not a file")
        with self.directory(located.rel.parent) as parent:
            try:
                fd = os.open(located.rel.name, _FILE_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                raise ToolError(f"{located.shown} does not exist") from None
            except IsADirectoryError:
                raise ToolError(f"{located.shown} is a folder, not a file") from None
            except OSError as exc:
                raise _swapped(located.rel, exc) from exc
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{located.shown} is a folder, not a file")
            if not stat.S_ISREG(info.st_mode):
                raise ToolError(f"{located.shown} is not a regular file")
            if self.links_to_home(info):
                raise ToolError(
                    f"{located.shown} is a hard link to a file in Lore's home; no tool may read it"
                )
            yield fd, info.st_size
        finally:
            os.close(fd)

    def exists(self, located: Located) -> bool:
        try:
            with self.directory(located.rel.parent) as parent:
                os.stat(located.rel.name, dir_fd=parent, follow_symlinks=False)
            return True
        except (ToolError, FileNotFoundError):
            return False

    def write_bytes(self, located: Located, data: bytes) -> None:
        """Replace the file's content atomically (a temporary file, then rename)."""
        if located.rel == PurePosixPath("."):
            raise ToolError(f"{located.path} is a folder, not a file")
        name = located.rel.name
        with self.directory(located.rel.parent, create=True) as parent:
            mode = 0o644
            try:
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None:
                if stat.S_ISLNK(info.st_mode):
                    raise _swapped(located.rel, OSError(errno.ELOOP, "symlink"))
                if not stat.S_ISREG(info.st_mode):
                    raise ToolError(f"{located.shown} is not a regular file")
                mode = stat.S_IMODE(info.st_mode)
            temp = f".{name}.lore-{os.getpid()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(temp, flags, 0o600, dir_fd=parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fchmod(f.fileno(), mode)
                    os.fsync(f.fileno())
                os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                try:
                    os.unlink(temp, dir_fd=parent)
                except OSError:
                    pass
                raise


def _swapped(rel: PurePosixPath, exc: OSError) -> ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return ToolError(f"{rel} changed into a link while being opened; refused")
    return ToolError(f"{rel}: {exc.strerror or exc}")
