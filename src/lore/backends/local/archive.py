"""The exact archive of closed sessions and its index, `sessions/_sessions.jsonl`.

An archived transcript is `sessions/archive/YYYY-MM-DD-HHMM-slug--shortid.jsonl`: one
metadata line, then every message of the session exactly as it was live. It is written
to a temporary file, fsynced and renamed into place, so it is either whole or absent.
The index gets one line per closed session, appended (locked, fsynced) only after the
transcript is durable; later lines about the same session (a summary link, a re-close)
update it when read. A torn last index line is skipped by readers and cut off by the next
writer. Paths never change once indexed; the index and metadata store them relative to
Lore's home.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from lore.errors import DiskFullError, SessionError
from lore.files import cut_torn_tail, disk_full, fsync_dir, locked_file, write_all
from lore.llm.base import Message
from lore.messages import parse_message
from lore.ports.sessions import ArchivedSession, FaultHook, SessionMeta

__all__ = ["SessionArchive", "message_line", "parse_message_line"]

log = logging.getLogger(__name__)


class SessionArchive:
    """`sessions/archive/` and `sessions/_sessions.jsonl` under one home."""

    def __init__(self, sessions_dir: Path, home: Path) -> None:
        self.home = home
        self.dir = sessions_dir / "archive"
        self.index_path = sessions_dir / "_sessions.jsonl"
        self._lock_path = sessions_dir / "_sessions.lock"

    # -- paths -----------------------------------------------------------------

    @property
    def index_location(self) -> str:
        """Where the index is, as the summary files name it."""
        return self.relative(self.index_path)

    def stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.index_path.stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.home).as_posix()
        except ValueError:
            return str(path)

    def fingerprint(self, entry: ArchivedSession) -> tuple[int, int] | None:
        try:
            stat = self.resolve(entry.transcript_path).stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def resolve(self, stored: str) -> Path:
        path = Path(stored)
        return path if path.is_absolute() else self.home / path

    # -- writing ---------------------------------------------------------------

    def write_transcript(
        self,
        meta: SessionMeta,
        messages: Sequence[Message],
        *,
        ended_at: datetime,
        zone: tzinfo,
        slug: str,
        reason: str,
        fault: FaultHook | None = None,
    ) -> ArchivedSession:
        """Write the exact transcript (atomically, fsynced); return its index entry."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self._existing(meta.session_id) or self._new_path(
            meta.session_id, ended_at, zone, slug
        )
        entry = ArchivedSession(
            session_id=meta.session_id,
            key=meta.key,
            slug=slug,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            ended_at=ended_at.isoformat(timespec="seconds"),
            message_count=len(messages),
            transcript_path=self.relative(path),
            reason=reason,
        )
        header = {
            "_type": "metadata",
            **entry.to_dict(),
            "metadata": {"last_consolidated": meta.last_consolidated, "extra": meta.extra},
        }
        tmp = path.with_name(f".{path.name}.tmp")
        _write_durably(tmp, b"".join([_dumps(header), *(_dumps(m) for m in messages)]))
        if fault is not None:
            fault("archive_tmp_written")
        os.replace(tmp, path)
        fsync_dir(self.dir)
        return entry

    def restore(
        self, entry: ArchivedSession, metadata: dict[str, Any], messages: Sequence[Message]
    ) -> None:
        """Write a transcript copied from another store at its own path, then index it
        (`lore migrate`: paths and summary links stay as they were)."""
        path = self.resolve(entry.transcript_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"_type": "metadata", **entry.to_dict(), "metadata": metadata}
        tmp = path.with_name(f".{path.name}.tmp")
        _write_durably(tmp, b"".join([_dumps(header), *(_dumps(m) for m in messages)]))
        os.replace(tmp, path)
        fsync_dir(path.parent)
        self.append_index(entry)

    def metadata(self, entry: ArchivedSession) -> dict[str, Any]:
        """The live session's metadata (last_consolidated, extra) kept with a transcript."""
        header = self.read_metadata(self.resolve(entry.transcript_path)) or {}
        found = header.get("metadata")
        return found if isinstance(found, dict) else {}

    def append_index(self, entry: ArchivedSession) -> None:
        """Make a closed session discoverable: one fsynced line in `_sessions.jsonl`."""
        self._append_index_line({"_type": "session", **entry.to_dict()})

    def link_summary(
        self, session_id: str, memory_path: str | None, slug: str, status: str
    ) -> None:
        """Point the transcript metadata and the index at the session's summary file."""
        entry = self.get(session_id)
        if entry is None:
            raise SessionError(f"no archived session {session_id}")
        path = self.resolve(entry.transcript_path)
        with path.open("rb") as f:
            first = f.readline()
            body = f.read()
        header = json.loads(first)
        header.update(memory_path=memory_path, slug=slug, summary=status)
        tmp = path.with_name(f".{path.name}.tmp")
        _write_durably(tmp, _dumps(header) + body)
        os.replace(tmp, path)
        fsync_dir(self.dir)
        self._append_index_line(
            {
                "_type": "link",
                "session_id": session_id,
                "memory_path": memory_path,
                "slug": slug,
                "summary": status,
            }
        )

    def index_missing(self, entries: Sequence[ArchivedSession]) -> list[ArchivedSession]:
        """Append the index lines of those `entries` the index does not hold yet, in one
        fsynced write under the index lock (`lore doctor --repair` after the index was
        emptied or cut short); the lines already there stay as they are. Returns those
        appended."""
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        with locked_file(self._lock_path):
            known = {entry.session_id for entry in self.entries()}
            added = [entry for entry in entries if entry.session_id not in known]
            if added:
                self._append_locked(
                    b"".join(_dumps({"_type": "session", **e.to_dict()}) for e in added)
                )
        return added

    def remove(self, session_ids: list[str]) -> int:
        """One fsynced `removed` line per indexed session (readers drop it from then on),
        then its transcript deleted; a crash between leaves a file the index no longer
        names, and removing again deletes it."""
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        wanted = set(session_ids)
        with locked_file(self._lock_path):
            found = [entry for entry in self.entries() if entry.session_id in wanted]
            if found:
                self._append_locked(
                    b"".join(
                        _dumps({"_type": "removed", "session_id": e.session_id}) for e in found
                    )
                )
        paths = [self.resolve(entry.transcript_path) for entry in found]
        paths += [p for sid in wanted if (p := self._existing(sid)) is not None]
        for path in paths:
            path.unlink(missing_ok=True)
        if paths:
            fsync_dir(self.dir)
        return len(found)

    def _append_index_line(self, data: dict[str, Any]) -> None:
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        with locked_file(self._lock_path):
            self._append_locked(_dumps(data))

    def _append_locked(self, payload: bytes) -> None:
        size = cut_torn_tail(self.index_path)
        fd = os.open(self.index_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            write_all(fd, payload)
            os.fsync(fd)
        except OSError as exc:
            os.ftruncate(fd, size)  # the lines already there, and not half a new one
            if disk_full(exc):
                raise DiskFullError() from exc
            raise
        finally:
            os.close(fd)

    # -- reading ---------------------------------------------------------------

    def entries(self) -> list[ArchivedSession]:
        """Every indexed session, in the order they were (last) closed."""
        merged: dict[str, ArchivedSession] = {}
        for data in self._index_lines():
            session_id = str(data.get("session_id", ""))
            if data.get("_type") == "removed":
                merged.pop(session_id, None)
                continue
            try:
                if data.get("_type") == "link":
                    if session_id in merged:
                        merged[session_id] = replace(
                            merged[session_id],
                            memory_path=data.get("memory_path") or None,
                            slug=str(data.get("slug") or merged[session_id].slug),
                            summary=str(data.get("summary", "written")),
                        )
                    continue
                entry = ArchivedSession.from_dict(data)
            except (KeyError, TypeError, ValueError):
                log.warning("%s: skipped a malformed line", self.index_path.name)
                continue
            earlier = merged.pop(session_id, None)
            if earlier is not None and earlier.memory_path and not entry.memory_path:
                # A re-close keeps the earlier summary file until a new one is linked; the
                # summary of the longer transcript is still pending.
                entry = replace(entry, memory_path=earlier.memory_path)
            merged[session_id] = entry
        return list(merged.values())

    def get(self, session_id: str) -> ArchivedSession | None:
        for entry in self.entries():
            if entry.session_id == session_id:
                return entry
        return None

    def read_messages(
        self, entry: ArchivedSession, *, offset: int = 0, limit: int | None = None
    ) -> tuple[list[Message], int]:
        """Messages `offset`.. of an archived transcript (at most `limit`), and the total.

        A line that is not a message (damaged on disk, edited by hand) is skipped with a
        warning naming the file and line: one bad line never hides the rest."""
        path = self.resolve(entry.transcript_path)
        found: list[Message] = []
        total = 0
        try:
            for message in self.iter_messages(path):
                if total >= offset and (limit is None or len(found) < limit):
                    found.append(message)
                total += 1
        except FileNotFoundError as exc:
            raise SessionError(f"archived transcript {entry.transcript_path} is missing") from exc
        return found, total

    def iter_messages(self, path: Path) -> Iterator[Message]:
        """Every readable message line of a transcript after its metadata line."""
        with path.open("rb") as f:
            f.readline()  # metadata
            for number, raw in enumerate(f, start=2):
                if not raw.strip():
                    continue
                try:
                    message = message_line(raw)
                except SessionError as exc:
                    log.warning(
                        "%s line %d: skipped an unreadable message line (%s)",
                        self.relative(path),
                        number,
                        exc,
                    )
                    continue
                yield message

    def read_metadata(self, path: Path) -> dict[str, Any] | None:
        try:
            with path.open("rb") as f:
                data = json.loads(f.readline())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("_type") == "metadata" else None

    def transcripts(self) -> Iterator[Path]:
        if self.dir.exists():
            yield from sorted(p for p in self.dir.glob("*.jsonl") if not p.name.startswith("."))

    def temp_files(self) -> list[Path]:
        return sorted(self.dir.glob(".*.tmp")) if self.dir.exists() else []

    def _index_lines(self) -> Iterator[dict[str, Any]]:
        try:
            data = self.index_path.read_bytes()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # a torn last line is not a line yet
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            try:
                parsed = json.loads(raw)
            except ValueError:
                log.warning("%s: skipped an unreadable line", self.index_path.name)
                continue
            if isinstance(parsed, dict):
                yield parsed

    def _existing(self, session_id: str) -> Path | None:
        """A transcript already written for this session (a re-close, or a crashed close)."""
        if not self.dir.exists():
            return None
        for path in self.dir.glob(f"*--{session_id[:8]}*.jsonl"):
            meta = self.read_metadata(path)
            if meta is not None and meta.get("session_id") == session_id:
                return path
        return None

    def _new_path(self, session_id: str, ended_at: datetime, zone: tzinfo, slug: str) -> Path:
        stamp = ended_at.astimezone(zone).strftime("%Y-%m-%d-%H%M")
        for width in (8, 12, 32):
            path = self.dir / f"{stamp}-{slug}--{session_id[:width]}.jsonl"
            if not path.exists():
                return path
        raise SessionError(f"cannot name the archive of session {session_id}: all names taken")


def parse_message_line(raw: bytes) -> Message | None:
    """One transcript line as a message, or None if it is not one."""
    try:
        return message_line(raw)
    except SessionError:
        return None


def message_line(raw: bytes) -> Message:
    """One transcript line as a message; a one-line SessionError when it is not one."""
    try:
        data = json.loads(raw)
    except ValueError:  # bad JSON or bad UTF-8
        raise SessionError("not JSON text") from None
    return parse_message(data)


def _write_durably(tmp: Path, content: bytes) -> None:
    """`content` whole and fsynced at `tmp`, or no `tmp` at all (a full disk says so)."""
    try:
        with tmp.open("wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if disk_full(exc):
            raise DiskFullError() from exc
        raise


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
