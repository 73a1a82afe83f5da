"""This process as the holder of leases, with a proof of life the other processes of the
same home can read.

A lease (a reminder being delivered, a chat message being answered) is how a process
says "mine, for now": if it dies, the lease runs out and another process takes the work
over, a minute later. A holder makes that wait unneeded where it can: each process
holds an exclusive lock on its own file in `<home>/.holders/` for as long as it lives.
The kernel drops the lock when the process ends, however it ends (kill -9 included), so
a holder file nobody holds names a process that is gone, and its leases can be taken
over at once. A file that is not there names a process this home cannot see (another
machine sharing the database): its leases run out as before. A holder that stops
cleanly marks itself gone the same way, so what it leaves is taken over at once too.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

__all__ = ["LeaseHolder"]

_LIVE = ".holder"
_GONE = ".gone"
_DRAFT = ".tmp"
# A gone holder's mark (or the draft of one that died starting) is kept this long, longer
# than any lease, then removed: by then whatever it held has run out anyway.
_KEEP_GONE_SECONDS = 3600.0

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no proof of life, leases run out
    fcntl = None  # type: ignore[assignment]


class LeaseHolder:
    """One per process: `name` is the owner written on its leases; `gone()` names the
    holders of this home known to have ended."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.name = uuid.uuid4().hex
        self._fd: int | None = None
        if fcntl is None:
            return
        directory.mkdir(parents=True, exist_ok=True)
        # Locked before it takes its name: a holder file is never seen unlocked while
        # its process lives.
        draft = directory / f"{self.name}{_DRAFT}"
        fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.replace(draft, directory / f"{self.name}{_LIVE}")
        self._fd = fd

    def gone(self) -> list[str]:
        """The names of this home's holders whose process has ended (not this one)."""
        if fcntl is None or not self.directory.is_dir():
            return []
        names = []
        now = time.time()
        for path in self.directory.iterdir():
            if path.stem == self.name:
                continue
            if path.suffix == _LIVE:
                if _ended(path):
                    names.append(path.stem)
            elif path.suffix in (_GONE, _DRAFT) and not _aged_out(path, now):
                if path.suffix == _GONE:
                    names.append(path.stem)
        return sorted(names)

    def close(self) -> None:
        """This process stops holding: what it still holds may be taken over at once."""
        if self._fd is None:
            return
        live = self.directory / f"{self.name}{_LIVE}"
        with contextlib.suppress(OSError):
            os.replace(live, self.directory / f"{self.name}{_GONE}")
        os.close(self._fd)
        self._fd = None


def _aged_out(path: Path, now: float) -> bool:
    """A gone mark or a draft older than any lease: removed (True), or kept."""
    try:
        if now - path.stat().st_mtime <= _KEEP_GONE_SECONDS:
            return False
        path.unlink()
    except OSError:
        return False  # removed by another process meanwhile, or not ours to remove
    return True


def _ended(path: Path) -> bool:
    """Nobody holds this holder file: its process ended. It is renamed gone (once, by
    whichever process sees it first), so its mark ages out."""
    assert fcntl is not None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # renamed or removed meanwhile: seen on the next look
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        with contextlib.suppress(OSError):
            os.replace(path, path.with_suffix(_GONE))
            os.utime(path.with_suffix(_GONE))
        return True
    finally:
        os.close(fd)
