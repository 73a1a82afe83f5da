"""Log-ins to the web page, kept on the server so the browser never holds a token.

Logging in with a token opens a log-in: a random id (the cookie's value), the
fingerprint of the token it was opened with, and an expiry. The page's CSRF token is
derived from the id, so a page that cannot read the cookie cannot make it either. Only
each id's SHA-256 is stored, in `LORE_HOME/web_logins.json` (mode 0600): the file lets
nobody in, and log-ins outlive a restart of `lore serve`. `lore serve --logout-all`
empties it; a running server rereads it whenever it changed, so that holds at once, in
every worker of the home.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from lore.errors import ConfigError
from lore.files import atomic_write, locked_file

__all__ = ["Login", "Logins", "log_out_everyone"]

# A token holder logging in over and over must not grow the file without end.
_MOST = 1000


@dataclass(frozen=True)
class Login:
    id: str
    fingerprint: str  # of the token it was opened with
    expires_at: datetime

    @property
    def csrf(self) -> str:
        """The token the page sends back with every change it asks for."""
        return hmac.new(self.id.encode(), b"lore web page csrf", hashlib.sha256).hexdigest()

    def sent(self, csrf: str) -> bool:
        return bool(csrf) and hmac.compare_digest(self.csrf, csrf)


@dataclass(frozen=True)
class _Stored:
    fingerprint: str
    expires_at: datetime


class Logins:
    """The web page's log-ins of one home."""

    def __init__(self, path: Path, lifetime: timedelta) -> None:
        self.path = path
        self.lifetime = lifetime
        self._known: dict[str, _Stored] = {}
        self._seen: tuple[int, int, int] | None = None

    def open(self, fingerprint: str, now: datetime) -> Login:
        login = Login(secrets.token_urlsafe(32), fingerprint, now + self.lifetime)
        with self._changing() as known:
            for key in [key for key, stored in known.items() if stored.expires_at <= now]:
                del known[key]
            while len(known) >= _MOST:
                del known[min(known, key=lambda key: known[key].expires_at)]
            known[_digest(login.id)] = _Stored(fingerprint, login.expires_at)
        return login

    def find(self, login_id: str, now: datetime) -> Login | None:
        """The log-in behind a cookie, if it is still open."""
        if not login_id:
            return None
        self._refresh()
        stored = self._known.get(_digest(login_id))
        if stored is None or stored.expires_at <= now:
            return None
        return Login(login_id, stored.fingerprint, stored.expires_at)

    def close(self, login_id: str) -> None:
        with self._changing() as known:
            known.pop(_digest(login_id), None)

    def _refresh(self) -> None:
        signature = _signature(self.path)
        if signature != self._seen:
            self._known = _read(self.path)
            self._seen = signature

    @contextmanager
    def _changing(self) -> Iterator[dict[str, _Stored]]:
        """The stored log-ins to change, read and written back under the file's lock."""
        with locked_file(_lock_path(self.path)):
            known = _read(self.path)
            yield known
            _write(self.path, known)
            self._known, self._seen = known, _signature(self.path)


def log_out_everyone(path: Path) -> int:
    """End every log-in of the home, with or without a server running; how many were open."""
    if not path.exists():
        return 0
    with locked_file(_lock_path(path)):
        count = len(_read(path))
        _write(path, {})
    return count


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _digest(login_id: str) -> str:
    return hashlib.sha256(login_id.encode()).hexdigest()


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return (found.st_ino, found.st_mtime_ns, found.st_size)


def _read(path: Path) -> dict[str, _Stored]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            key: _Stored(str(item["token"]), datetime.fromisoformat(item["expires_at"]))
            for key, item in data["logins"].items()
        }
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # Unreadable log-ins are no log-ins: everyone logs in again, nobody gets in.
        return {}


def _write(path: Path, known: dict[str, _Stored]) -> None:
    data = {
        "logins": {
            key: {"token": stored.fingerprint, "expires_at": stored.expires_at.isoformat()}
            for key, stored in known.items()
        }
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1).encode(), mode=0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
