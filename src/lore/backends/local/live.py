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
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.errors import DiskFullError, SessionError
from lore.files import atomic_write, disk_full, locked_file, try_lock, try_lock_fd, write_all
from lore.keys import key_to_filename
from lore.llm.base import Message
from lore.messages import merge_flags, parse_message
from lore.ports.sessions import SessionMeta

__all__ = ["Draft", "LiveSession", "new_session_id"]

log = logging.getLogger(__name__)

META_WIDTH = 1024  # bytes of the first line, newline included


def new_session_id() -> str:
    return uuid.uuid4().hex


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Draft:
    """The reply being streamed, written as it is shown (no fsync: a killed process's
    writes still reach the file; only a power cut can lose the last chunks). The file is
    created, and locked, with the first chunk: a turn that streams no text makes none."""

    def __init__(self, path: Path, header: Callable[[], bytes]) -> None:
        self._path = path
        self._header = header  # made with the first chunk: what the turn knew by then
        self._fd: int | None = None
        self._parts: list[str] = []

    def write(self, text: str) -> None:
        """Keep `text` before it is shown; a full disk refuses it (DiskFullError), so
        nothing is shown that a crash could lose."""
        self._parts.append(text)
        try:
            if self._fd is None:
                self._open()
            if self._fd is None or self._fd < 0:
                return
            write_all(self._fd, text.encode("utf-8", errors="replace"))
        except OSError as exc:
            if disk_full(exc):
                raise DiskFullError() from exc
            raise

    def _open(self) -> None:
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT, 0o600)
        if not try_lock_fd(fd):
            # Another process streams a reply in this conversation right now: leave its
            # draft alone (this reply is still kept in full when the turn ends).
            os.close(fd)
            self._fd = -1
            return
        self._fd = fd  # closed (and the file removed) when the turn ends, whatever happens
        os.ftruncate(fd, 0)
        write_all(fd, self._header() + "".join(self._parts[:-1]).encode("utf-8", "replace"))

    def close(self) -> None:
        if self._fd is not None and self._fd >= 0:
            self._path.unlink(missing_ok=True)
            os.close(self._fd)
        self._fd = None

    @property
    def text(self) -> str:
        return "".join(self._parts)


def meta_line(meta: SessionMeta) -> bytes:
    """The metadata line, padded to META_WIDTH so it can be rewritten in place."""
    data = {"_type": "metadata", **asdict(meta)}
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(raw) + 1 > META_WIDTH:
        return raw + b"\n"
    return raw + b" " * (META_WIDTH - len(raw) - 1) + b"\n"


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
        self._lock_depth = 0
        # Threads share this handle (the after-turn indexing reads it from a worker): one
        # reads or writes it at a time, and only the holder's own calls nest.
        self._threads = threading.RLock()
        directory.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if not self.path.exists() or self.path.stat().st_size == 0:
                self._create()
            self._load_all()
            self._recover_draft()

    # -- reading ---------------------------------------------------------------

    def refresh(self) -> None:
        """Pick up lines appended (or a reset done) by another process since last read."""
        with self._threads:
            self._refresh()

    def _refresh(self) -> None:
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
            raise SessionError(
                f"{self.path}: unreadable session metadata ({exc}); "
                "`lore doctor --repair` rebuilds it"
            ) from exc
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
                data = json.loads(raw)
                if isinstance(data, dict) and data.get("_type") == "mark":
                    self._apply_mark(data)
                    continue
                message = parse_message(data)
            except (ValueError, SessionError) as exc:
                why = exc if isinstance(exc, SessionError) else "not JSON text"
                log.warning(
                    "%s: skipped a corrupt line near byte %d (%s)", self.path.name, offset, why
                )
                continue
            self.messages.append(message)
        self._offset = offset + end

    # -- writing ---------------------------------------------------------------

    def append(self, messages: list[Message], *, touch: bool = True, durable: bool = True) -> None:
        """Append messages (one line each), fsync, and bump `updated_at` (unless not
        `touch`: a turn writes what the user said first, and touches once at its end).
        Not `durable`: written, so a killed process keeps it, but left for the next
        durable append's fsync to carry to the disk."""
        self._append_lines(messages, touch=touch, durable=durable)

    def _append_lines(
        self, messages: Sequence[Mapping[str, object]], *, touch: bool = True, durable: bool = True
    ) -> None:
        if not messages:
            return
        payload = b"".join(
            json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            for m in messages
        )
        with self._locked():
            self.refresh()
            fd = os.open(self.path, os.O_RDWR)
            try:
                size = os.lseek(fd, 0, os.SEEK_END)
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    payload = b"\n" + payload  # a torn line stays on its own line
                try:
                    write_all(fd, payload)
                    if durable:
                        os.fsync(fd)
                except OSError as exc:
                    # Never half a line: cut what got written (freeing space needs none).
                    os.ftruncate(fd, size)
                    if disk_full(exc):
                        raise DiskFullError() from exc
                    raise
            finally:
                os.close(fd)
            self.refresh()
            if touch:
                # Not fsynced: a lost `updated_at` only makes the session look older, and
                # idle checks also read the last message's own time.
                self._write_meta(durable=False, updated_at=utc_now_iso())

    def append_once(self, key: str, messages: list[Message]) -> bool:
        """Append unless a message with delivery key `key` is already in the session."""
        with self._locked():
            self.refresh()
            if any(m.get("delivery") == key for m in self.messages):
                return False
            self.append([{**m, "delivery": key} for m in messages])
            return True

    def mark(self, index: int, **flags: Any) -> None:
        """Set flags on message `index` (e.g. cancelled=True) with one appended line: the
        transcript stays append-only, and readers apply the mark as they load it."""
        self._append_lines([{"_type": "mark", "index": index, "flags": flags}], touch=False)

    @contextmanager
    def draft(self, index: int, why: Callable[[], dict[str, Any]] | None = None) -> Iterator[Draft]:
        """A file the reply being streamed for message `index` goes to, chunk by chunk,
        before the channel shows it. Gone when the turn ends; a process killed mid-reply
        leaves it, and the next process to open the session turns it into an assistant
        message marked `interrupted`."""
        session_id = self.meta.session_id

        def header() -> bytes:
            data: dict[str, Any] = {"index": index, "session_id": session_id}
            if why is not None and (record := why()):
                data["why"] = record
            return json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n"

        draft = Draft(self._draft_path, header)
        try:
            yield draft
        finally:
            draft.close()

    def locked(self) -> AbstractContextManager[None]:
        """Hold the write lock across several steps (appends inside are fine)."""
        return self._locked()

    @property
    def _draft_path(self) -> Path:
        return self.path.with_name(self.path.name[: -len(".jsonl")] + ".draft")

    def _recover_draft(self) -> None:
        """A reply a killed process was streaming: keep what the user saw of it."""
        path = self._draft_path
        if not path.exists():
            return
        with try_lock(path) as free:
            if not free:
                return  # still being written by a live turn
            raw = path.read_bytes()
            head, _, body = raw.partition(b"\n")
            try:
                header = json.loads(head)
                index = int(header["index"])
                same = header.get("session_id") == self.meta.session_id
                why = header.get("why")
            except (ValueError, KeyError, TypeError):
                same, index, why = False, -1, None
            text = body.decode("utf-8", errors="replace")
            unanswered = same and index == len(self.messages) - 1
            if unanswered and text.strip():
                timestamp = self.messages[index].get("timestamp", utc_now_iso())
                log.warning("%s: kept a reply interrupted by a crash", self.path.name)
                reply: Message = {
                    "role": "assistant",
                    "content": text,
                    "timestamp": timestamp,
                    "interrupted": True,
                }
                if isinstance(why, dict) and why:
                    reply["why"] = why
                self.append([reply])
            path.unlink(missing_ok=True)

    def _apply_mark(self, data: dict[str, Any]) -> None:
        index, flags = data.get("index"), data.get("flags")
        if isinstance(index, int) and 0 <= index < len(self.messages) and isinstance(flags, dict):
            try:
                merge_flags(self.messages[index], flags)
            except SessionError as exc:
                log.warning("%s: skipped a mark on message %d (%s)", self.path.name, index, exc)

    def update_meta(self, **changes: Any) -> None:
        with self._locked():
            self.refresh()
            self._write_meta(**changes)

    def reset(self, session_id: str | None = None) -> None:
        """Start a fresh transcript under the same key (after it was archived)."""
        with self._locked():
            self._create(session_id)
            self._load_all()

    def _write_meta(self, *, durable: bool = True, **changes: Any) -> None:
        for name, value in changes.items():
            if name == "extra":
                self.meta.extra.update(value)
            else:
                setattr(self.meta, name, value)
        line = meta_line(self.meta)
        if len(line) == self._meta_len:
            with self.path.open("r+b") as f:
                f.write(line)
                f.flush()
                if durable:
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
        self._replace(meta_line(self.meta))

    def _replace(self, content: bytes) -> None:
        atomic_write(self.path, content)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._threads, self._flocked():
            yield

    @contextmanager
    def _flocked(self) -> Iterator[None]:
        # flock does not nest across file descriptions: count the depth in this object
        # (for the thread holding it: the others wait at `_threads`).
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        with locked_file(self._lock_path):
            self._lock_depth = 1
            try:
                yield
            finally:
                self._lock_depth = 0
