"""`memory/history.jsonl`: summaries of conversation that left the window, in cursor order.

Each line is `{cursor, timestamp, session_key, content}`. `memory/.cursor` holds the last
cursor handed out; `memory/.dream_cursor` the last one Dream has fully processed;
`memory/.history_keys.json` where each conversation's newest lines start, so reading one
conversation's recent entries never scans the whole file. Entries
after the Dream cursor are "pending": shown to their own conversation as Recent History
until Dream folds them into the curated files. Appends are locked and fsynced; a torn
last line (a crash mid-write) is skipped by readers and cut off by the next writer.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from lore.files import cut_torn_tail, locked_file
from lore.ports.notes import HistoryEntry

__all__ = ["History", "HistoryEntry"]

log = logging.getLogger(__name__)

_BLOCK = 64 * 1024
# Offsets kept per conversation: more than the 50 entries Recent History shows.
_KEPT_OFFSETS = 64


class History:
    """The history file of one workspace's `memory/` directory."""

    redacted_noun = "history entry"  # forget everywhere's word for one

    def __init__(self, memory_dir: Path) -> None:
        self.dir = memory_dir
        self.path = memory_dir / "history.jsonl"
        self.cursor_path = memory_dir / ".cursor"
        self.dream_cursor_path = memory_dir / ".dream_cursor"
        self._lock_path = memory_dir / ".history.lock"
        self._keys_path = memory_dir / ".history_keys.json"

    # -- writing ---------------------------------------------------------------

    def append(self, session_key: str, content: str, *, now: datetime) -> HistoryEntry:
        """Append one entry under the next cursor; durable when this returns."""
        if now.tzinfo is None:
            raise ValueError("history timestamps must be aware datetimes")
        self.dir.mkdir(parents=True, exist_ok=True)
        with locked_file(self._lock_path):
            size = cut_torn_tail(self.path)
            # The cursor file is written after the line, so a crash between the two
            # leaves it behind; the file's own last cursor is the other witness.
            last = max(_read_int(self.cursor_path), self._last_cursor(size))
            entry = HistoryEntry(
                cursor=last + 1,
                timestamp=now.isoformat(timespec="seconds"),
                session_key=session_key,
                content=content.strip(),
            )
            with self.path.open("ab") as f:
                f.write(_line(entry))
                f.flush()
                os.fsync(f.fileno())
            _write_int(self.cursor_path, entry.cursor)
            self._note_offset(session_key, size)
        return entry

    def dream_cursor(self) -> int:
        return _read_int(self.dream_cursor_path)

    def set_dream_cursor(self, cursor: int) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_int(self.dream_cursor_path, cursor)

    # -- reading ---------------------------------------------------------------

    def entries(self, after: int = 0, *, limit: int | None = None) -> list[HistoryEntry]:
        """Entries with cursor > `after`, oldest first, at most `limit` (the oldest ones)."""
        found: list[HistoryEntry] = []
        for entry in self._reversed():
            if entry.cursor <= after:
                break
            found.append(entry)
        found.reverse()
        return found if limit is None else found[:limit]

    def recent(
        self, session_key: str, *, after: int | None = None, limit: int = 50
    ) -> list[HistoryEntry]:
        """The newest `limit` entries of one key (after cursor `after`), oldest first."""
        indexed = self._indexed_recent(session_key, limit)
        if indexed is not None:
            return [entry for entry in indexed if after is None or entry.cursor > after]
        found: list[HistoryEntry] = []
        for entry in self._reversed():
            if after is not None and entry.cursor <= after:
                break
            if entry.session_key == session_key:
                found.append(entry)
                if len(found) >= limit:
                    break
        found.reverse()
        return found

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        return 0  # history.jsonl is a file under the home: forget everywhere rewrites it

    # -- the per-key offsets ------------------------------------------------------

    def _indexed_recent(self, session_key: str, limit: int) -> list[HistoryEntry] | None:
        """The key's newest entries read at their offsets, or None when the offsets are
        missing or stale (the file changed without them): then the caller scans."""
        keys = self._load_keys()
        if keys is None:
            return None
        offsets = keys.get(session_key, [])
        if limit > _KEPT_OFFSETS and len(offsets) >= _KEPT_OFFSETS:
            return None  # more wanted than kept
        found: list[HistoryEntry] = []
        try:
            with self.path.open("rb") as f:
                for offset in offsets[-limit:]:
                    f.seek(offset)
                    entry = _parse(f.readline())
                    if entry is None or entry.session_key != session_key:
                        return None
                    found.append(entry)
        except OSError:
            return None
        return found

    def _load_keys(self) -> dict[str, list[int]] | None:
        try:
            data = json.loads(self._keys_path.read_bytes())
            stat = self.path.stat()
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("file") != [stat.st_ino, stat.st_size]:
            return None
        keys = data.get("keys")
        return keys if isinstance(keys, dict) else None

    def _note_offset(self, session_key: str, offset: int) -> None:
        """Record where the line just appended at `offset` starts (under the append lock);
        stale or missing offsets are rebuilt from the file, once."""
        stat = self.path.stat()
        try:
            data = json.loads(self._keys_path.read_bytes())
            fresh = data.get("file") == [stat.st_ino, offset]
            keys: dict[str, list[int]] = data["keys"] if fresh else {}
        except (OSError, ValueError, KeyError, AttributeError):
            fresh, keys = False, {}
        if fresh:
            keys.setdefault(session_key, []).append(offset)
        else:
            keys = self._scan_offsets()
        for key, offsets in keys.items():
            keys[key] = offsets[-_KEPT_OFFSETS:]
        content = {"file": [stat.st_ino, stat.st_size], "keys": keys}
        _write_bytes(self._keys_path, json.dumps(content, ensure_ascii=False).encode("utf-8"))

    def _scan_offsets(self) -> dict[str, list[int]]:
        keys: dict[str, list[int]] = {}
        offset = 0
        with self.path.open("rb") as f:
            for line in f:
                entry = _parse(line) if line.endswith(b"\n") else None
                if entry is not None:
                    keys.setdefault(entry.session_key, []).append(offset)
                offset += len(line)
        return keys

    def _reversed(self) -> Iterator[HistoryEntry]:
        """Entries newest first, reading the file backwards so pending ones cost little."""
        for raw in _reverse_lines(self.path):
            try:
                data = json.loads(raw)
                yield HistoryEntry(
                    cursor=int(data["cursor"]),
                    timestamp=str(data.get("timestamp", "")),
                    session_key=str(data.get("session_key", "")),
                    content=str(data.get("content", "")),
                )
            except (ValueError, KeyError, TypeError):
                log.warning("%s: skipped an unreadable line", self.path.name)

    def _last_cursor(self, size: int) -> int:
        if size == 0:
            return 0
        for entry in self._reversed():
            return entry.cursor
        return 0


def _parse(raw: bytes) -> HistoryEntry | None:
    try:
        data = json.loads(raw)
        return HistoryEntry(
            cursor=int(data["cursor"]),
            timestamp=str(data.get("timestamp", "")),
            session_key=str(data.get("session_key", "")),
            content=str(data.get("content", "")),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _write_bytes(path: Path, content: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)


def _reverse_lines(path: Path) -> Iterator[bytes]:
    """Complete lines of `path`, last first; a final line without newline is skipped."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return
    with f:
        position = f.seek(0, os.SEEK_END)
        rest = b""
        in_tail = True  # bytes after the last newline are not a complete line
        while position > 0:
            step = min(_BLOCK, position)
            position -= step
            f.seek(position)
            lines = (f.read(step) + rest).split(b"\n")
            rest = lines.pop(0)  # its start may lie in an earlier block
            if in_tail:
                if not lines:
                    rest = b""
                    continue
                lines.pop()
                in_tail = False
            for line in reversed(lines):
                if line.strip():
                    yield line
        if rest.strip() and not in_tail:
            yield rest


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text(encoding="utf-8").strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def _write_int(path: Path, value: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(f"{value}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _line(entry: HistoryEntry) -> bytes:
    data = json.dumps(asdict(entry), ensure_ascii=False, separators=(",", ":"))
    return data.encode("utf-8") + b"\n"
