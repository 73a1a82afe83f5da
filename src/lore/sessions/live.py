"""The live session: `sessions/<key>.jsonl`, a metadata line, then one message a line.

Messages are appended and fsynced, never rewritten per turn. The metadata line is
padded to a fixed width so it can be updated in place. An exclusive lock on a sidecar
file serialises writers across processes, so two processes never interleave lines. A
line that does not parse (a crash mid-write) is skipped with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.errors import SessionError
from lore.files import atomic_write, locked_file
from lore.llm.base import Message
from lore.sessions.keys import key_to_filename

__all__ = ["LiveSession", "SessionMeta", "new_session_id"]

log = logging.getLogger(__name__)

META_WIDTH = 1024  # bytes of the first line, newline included


def new_session_id() -> str:
    return uuid.uuid4().hex


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class SessionMeta:
    session_id: str
    key: str
    created_at: str
    updated_at: str
    last_consolidated: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_line(self) -> bytes:
        data = {"_type": "metadata", **asdict(self)}
        raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(raw) + 1 > META_WIDTH:
            return raw + b"\n"
        return raw + b" " * (META_WIDTH - len(raw) - 1) + b"\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionMeta:
        return cls(
            session_id=str(data["session_id"]),
            key=str(data["key"]),
            created_at=str(data.get("created_at", "")),
            updated_at=str(data.get("updated_at", "")),
            last_consolidated=int(data.get("last_consolidated", 0)),
            extra=dict(data.get("extra") or {}),
        )


class LiveSession:
    """One conversation's live transcript. Call `refresh()` to see other writers' lines."""

    def __init__(self, directory: Path, key: str) -> None:
        self.key = key
        self.path = directory / key_to_filename(key)
        # Lock files stay (removing one under a lock races with its next opener), so they
        # live apart in .locks/, one per conversation, not among the transcripts.
        self._lock_path = directory / ".locks" / key_to_filename(key, ".lock")
        self.messages: list[Message] = []
        self.meta: SessionMeta
        self._offset = 0
        self._meta_len = 0
        self._inode: int | None = None
        directory.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if not self.path.exists() or self.path.stat().st_size == 0:
                self._create()
            self._load_all()

    # -- reading ---------------------------------------------------------------

    def refresh(self) -> None:
        """Pick up lines appended (or a reset done) by another process since last read."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._create()
            self._load_all()
            return
        if stat.st_ino != self._inode or stat.st_size < self._offset:
            self._load_all()
            return
        self._read_meta()
        if stat.st_size > self._offset:
            self._read_from(self._offset)

    def _load_all(self) -> None:
        self.messages = []
        stat = self.path.stat()
        self._inode = stat.st_ino
        self._read_meta()
        self._read_from(self._meta_len)

    def _read_meta(self) -> None:
        with self.path.open("rb") as f:
            first = f.readline()
        try:
            data = json.loads(first)
            if not isinstance(data, dict) or data.get("_type") != "metadata":
                raise ValueError("first line is not session metadata")
            self.meta = SessionMeta.from_dict(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise SessionError(f"{self.path}: unreadable session metadata ({exc})") from exc
        self._meta_len = len(first)

    def _read_from(self, offset: int) -> None:
        with self.path.open("rb") as f:
            f.seek(offset)
            data = f.read()
        # A final line without newline may still be being written: leave it for later.
        end = data.rfind(b"\n") + 1
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            try:
                message = json.loads(raw)
                if not isinstance(message, dict) or "role" not in message:
                    raise ValueError("not a message")
            except ValueError:
                log.warning("%s: skipped a corrupt line near byte %d", self.path.name, offset)
                continue
            self.messages.append(message)
        self._offset = offset + end

    # -- writing ---------------------------------------------------------------

    def append(self, messages: list[Message]) -> None:
        """Append messages (one line each), fsync, and bump `updated_at`."""
        if not messages:
            return
        payload = b"".join(
            json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            for m in messages
        )
        with self._locked():
            self.refresh()
            with self.path.open("r+b") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                if size and not self._ends_with_newline(f, size):
                    payload = b"\n" + payload  # a torn line stays on its own line
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            self.refresh()
            self._write_meta(updated_at=utc_now_iso())

    def update_meta(self, **changes: Any) -> None:
        with self._locked():
            self.refresh()
            self._write_meta(**changes)

    def reset(self, session_id: str | None = None) -> None:
        """Start a fresh transcript under the same key (after it was archived)."""
        with self._locked():
            self._create(session_id)
            self._load_all()

    def _write_meta(self, **changes: Any) -> None:
        for name, value in changes.items():
            if name == "extra":
                self.meta.extra.update(value)
            else:
                setattr(self.meta, name, value)
        line = self.meta.to_line()
        if len(line) == self._meta_len:
            with self.path.open("r+b") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            return
        # Metadata outgrew its padding: rewrite once, atomically.
        with self.path.open("rb") as f:
            f.seek(self._meta_len)
            body = f.read()
        self._replace(line + body)
        self._load_all()

    def _create(self, session_id: str | None = None) -> None:
        now = utc_now_iso()
        self.meta = SessionMeta(
            session_id=session_id or new_session_id(), key=self.key, created_at=now, updated_at=now
        )
        self._replace(self.meta.to_line())

    def _replace(self, content: bytes) -> None:
        atomic_write(self.path, content)

    @staticmethod
    def _ends_with_newline(f: Any, size: int) -> bool:
        f.seek(size - 1)
        last: bytes = f.read(1)
        f.seek(0, os.SEEK_END)
        return last == b"\n"

    def _locked(self) -> AbstractContextManager[None]:
        return locked_file(self._lock_path)
