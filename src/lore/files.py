"""Durable files: locks across processes, fsynced atomic writes, torn-line repair.

Everything Lore keeps outside SQLite (sessions, the archive index, history) is written
through these, so a crash at any instant leaves whole lines and whole files.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lore.errors import DiskFullError

__all__ = [
    "atomic_write",
    "cut_torn_tail",
    "disk_full",
    "disk_is_full",
    "fsync_dir",
    "locked_file",
    "try_lock",
    "try_lock_fd",
    "write_all",
]

log = logging.getLogger(__name__)

_BLOCK = 64 * 1024
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_NEARLY_FULL = 1024 * 1024  # bytes free below which no Lore write can be counted on


def disk_full(exc: OSError) -> bool:
    """Did the system refuse a write because the disk (or the user's quota) is full?"""
    return exc.errno in _FULL


def disk_is_full(path: Path) -> bool:
    """Is the disk holding `path` (or its nearest existing parent) out of space for us?"""
    for candidate in (path, *path.parents):
        try:
            stat = os.statvfs(candidate)
        except FileNotFoundError:
            continue
        except OSError:
            return False
        return stat.f_bavail * stat.f_frsize < _NEARLY_FULL
    return False


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (a write may take only part of them)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_write(path: Path, content: bytes, *, mode: int = 0o666) -> None:
    """Replace `path` with `content`: written to a temporary file, fsynced, renamed.
    `mode` (before the umask) is the new file's: 0o600 for what only the owner may read."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        if mode != 0o666:  # a temporary file a crash left may have had looser permissions
            os.fchmod(fd, mode)
        write_all(fd, content)
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        tmp.unlink(missing_ok=True)  # `path` is as it was
        if disk_full(exc):
            raise DiskFullError() from exc
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` survive a power cut."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def cut_torn_tail(path: Path) -> int:
    """Drop a final line left without its newline by a crash; return the new size."""
    try:
        f = path.open("r+b")
    except FileNotFoundError:
        return 0
    with f:
        size = f.seek(0, os.SEEK_END)
        position = size
        while position > 0:
            step = min(_BLOCK, position)
            position -= step
            f.seek(position)
            block = f.read(step)
            cut = block.rfind(b"\n")
            if cut >= 0:
                new_size = position + cut + 1
                break
        else:
            new_size = 0
        if new_size != size:
            log.warning("%s: removed a torn last line", path.name)
            f.truncate(new_size)
            f.flush()
            os.fsync(f.fileno())
        return new_size


@contextmanager
def locked_file(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        _lock(handle.fileno())
        try:
            yield
        finally:
            _unlock(handle.fileno())


def try_lock_fd(fd: int) -> bool:
    """Take an exclusive lock on an open file until it is closed, if it is free."""
    return _try_lock(fd)


@contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """Take an exclusive lock on `path` if it is free: yields False (and waits for
    nothing) when another holder has it, in this process or another."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        if not _try_lock(handle.fileno()):
            yield False
            return
        try:
            yield True
        finally:
            _unlock(handle.fileno())


try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
