"""The history log on PostgreSQL: one row per entry under a cursor handed out 1, 2, ...
across every conversation, and the Dream cursor, so any worker's consolidation appends
and any worker's Dream reads the same log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from lore.backends.postgres.database import PostgresDatabase
from lore.ports.notes import HistoryEntry

__all__ = ["PostgresHistory"]

_DREAM = "dream_cursor"


class PostgresHistory:
    redacted_noun = "history entry"  # forget everywhere's word for one

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def append(self, session_key: str, content: str, *, now: datetime) -> HistoryEntry:
        if now.tzinfo is None:
            raise ValueError("history timestamps must be aware datetimes")
        with self.db.atomic() as conn:
            # One appender at a time: cursors are handed out in commit order, so a reader
            # that saw cursor n never misses an n-1 committed after it.
            self.db.lock(conn, "history")
            row = conn.execute("SELECT coalesce(max(cursor), 0) AS last FROM history").fetchone()
            entry = HistoryEntry(
                cursor=(0 if row is None else int(row["last"])) + 1,
                timestamp=now.isoformat(timespec="seconds"),
                session_key=session_key,
                content=content.strip(),
            )
            conn.execute(
                "INSERT INTO history (cursor, timestamp, session_key, content)"
                " VALUES (%s, %s, %s, %s)",
                (entry.cursor, entry.timestamp, entry.session_key, entry.content),
            )
        return entry

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        rows = self.db.fetch_all("SELECT cursor, content FROM history")
        changed = [(redact(r["content"]), r["cursor"]) for r in rows if match(r["content"])]
        if changed and not dry_run:
            with self.db.atomic() as conn, conn.cursor() as cursor:
                cursor.executemany("UPDATE history SET content = %s WHERE cursor = %s", changed)
        return len(changed)

    def dream_cursor(self) -> int:
        row = self.db.fetch_one("SELECT value FROM history_state WHERE name = %s", (_DREAM,))
        return 0 if row is None else int(row["value"])

    def set_dream_cursor(self, cursor: int) -> None:
        with self.db.atomic() as conn:
            conn.execute(
                "INSERT INTO history_state (name, value) VALUES (%s, %s)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (_DREAM, cursor),
            )

    def entries(self, after: int = 0, *, limit: int | None = None) -> list[HistoryEntry]:
        rows = self.db.fetch_all(
            "SELECT * FROM history WHERE cursor > %s ORDER BY cursor LIMIT %s", (after, limit)
        )
        return [_entry(row) for row in rows]

    def recent(
        self, session_key: str, *, after: int | None = None, limit: int = 50
    ) -> list[HistoryEntry]:
        rows = self.db.fetch_all(
            "SELECT * FROM history WHERE session_key = %s AND cursor > %s"
            " ORDER BY cursor DESC LIMIT %s",
            (session_key, -1 if after is None else after, limit),
        )
        return [_entry(row) for row in reversed(rows)]


def _entry(row: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(
        cursor=int(row["cursor"]),
        timestamp=str(row["timestamp"]),
        session_key=str(row["session_key"]),
        content=str(row["content"]),
    )
