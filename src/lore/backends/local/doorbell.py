"""A doorbell between the processes of one home: `ring()` after a reminder is added wakes
every process whose scheduler listens, at once, instead of at its next poll.

Each listener binds a datagram socket in Linux's abstract namespace (no file, no path
length limit) and leaves an empty file of the same name in `<home>/.doorbells/`, which
is how ringers find it; a name nobody answers to any more (a killed process) is removed
by the next ring. Elsewhere than on Linux there is no doorbell and the poll stays.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["Doorbell", "ring"]

log = logging.getLogger(__name__)

_DIR = ".doorbells"
_SUPPORTED = sys.platform.startswith("linux")


def _address(name: str) -> str:
    return "\0" + name


def ring(home: Path, *, skip: str = "") -> int:
    """Wake every listener of this home but `skip` (the ringer's own); how many were rung."""
    if not _SUPPORTED:
        return 0
    try:
        names = [entry.name for entry in os.scandir(home / _DIR)]
    except OSError:
        return 0
    rung = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as bell:
        bell.setblocking(False)
        for name in names:
            if name == skip:
                continue
            try:
                bell.sendto(b"!", _address(name))
                rung += 1
            except (ConnectionRefusedError, FileNotFoundError):  # its process is gone
                (home / _DIR / name).unlink(missing_ok=True)
            except BlockingIOError:  # its queue is full: it has been rung already
                rung += 1
            except OSError as exc:
                log.debug("could not ring %s: %s", name, exc)
    return rung


class Doorbell:
    """Listens for rings in a thread of its own and calls `answer` for each."""

    def __init__(self, home: Path, answer: Callable[[], None]) -> None:
        self._home = home
        self._answer = answer
        digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:12]
        self.name = f"lore-{digest}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Listen; False where there is no doorbell (or the home cannot hold one)."""
        if not _SUPPORTED:
            return False
        try:
            (self._home / _DIR).mkdir(parents=True, exist_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            listener.bind(_address(self.name))
            (self._home / _DIR / self.name).touch()
        except OSError as exc:
            log.info("no doorbell for reminders added elsewhere (%s); polling instead", exc)
            return False
        self._socket = listener
        self._thread = threading.Thread(target=self._listen, name="doorbell", daemon=True)
        self._thread.start()
        return True

    def _listen(self) -> None:
        listener = self._socket
        assert listener is not None
        while True:
            try:
                data = listener.recv(64)
            except OSError:  # closed
                return
            if data == b"stop":
                return
            try:
                self._answer()
            except Exception:  # a listener's failure never ends the doorbell
                log.exception("a doorbell listener failed")

    def close(self) -> None:
        (self._home / _DIR / self.name).unlink(missing_ok=True)
        if self._socket is None:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as bell:
            try:
                bell.sendto(b"stop", _address(self.name))
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(5)
        self._socket.close()
        self._socket = None
