"""The history log in a list: entries under increasing cursors, and Dream's cursor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from lore.ports.notes import HistoryEntry

__all__ = ["FakeHistory"]


class FakeHistory:
    redacted_noun = "history entry"  # forget everywhere's word for one

    def __init__(self) -> None:
        self._entries: list[HistoryEntry] = []
        self._dream_cursor = 0

    def append(self, session_key: str, content: str, *, now: datetime) -> HistoryEntry:
        if now.tzinfo is None:
            raise ValueError("history timestamps must be aware datetimes")
        last = self._entries[-1].cursor if self._entries else 0
        entry = HistoryEntry(
            cursor=last + 1,
            timestamp=now.isoformat(timespec="seconds"),
            session_key=session_key,
            content=content.strip(),
        )
        self._entries.append(entry)
        return entry

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        found = [n for n, entry in enumerate(self._entries) if match(entry.content)]
        if not dry_run:
            for n in found:
                entry = self._entries[n]
                self._entries[n] = replace(entry, content=redact(entry.content))
        return len(found)

    def dream_cursor(self) -> int:
        return self._dream_cursor

    def set_dream_cursor(self, cursor: int) -> None:
        self._dream_cursor = cursor

    def entries(self, after: int = 0, *, limit: int | None = None) -> list[HistoryEntry]:
        found = [entry for entry in self._entries if entry.cursor > after]
        return found if limit is None else found[:limit]

    def recent(
        self, session_key: str, *, after: int | None = None, limit: int = 50
    ) -> list[HistoryEntry]:
        found = [
            entry
            for entry in self._entries
            if entry.session_key == session_key and (after is None or entry.cursor > after)
        ]
        return found[-limit:] if limit > 0 else []
