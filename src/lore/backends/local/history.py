"""`memory/history.jsonl`: summaries of conversation that left the window, in cursor order.

Each line is `{cursor, timestamp, session_key, content}`. `memory/.cursor` holds the last
cursor handed out; `memory/.dream_cursor` the last one Dream has fully processed. Entries
after the Dream cursor are "pending": shown to their own conversation as Recent History
until Dream folds them into the curated files. Appends are locked and fsynced; a torn
last line (a crash mid-write) is skipped by readers and cut off by the next writer.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from lore.files import cut_torn_tail, locked_file
from lore.ports.notes import HistoryEntry

__all__ = ["History", "HistoryEntry"]

log = logging.getLogger(__name__)

_BLOCK = 64 * 1024


class History:
    """The history file of one workspace's `memory/` directory."""

    def __init__(self, memory_dir: Path) -> None:
        self.dir = memory_dir
        self.path = memory_dir / "history.jsonl"
        self.cursor_path = memory_dir / ".cursor"
        self.dream_cursor_path = memory_dir / ".dream_cursor"
        self._lock_path = memory_dir / ".history.lock"

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
