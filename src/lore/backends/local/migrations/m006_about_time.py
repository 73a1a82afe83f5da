"""Each search entry keeps, beside when it was said (`at`), the span of time it is about
when its text names one ("last week", "昨天", "в прошлом году"), resolved against its
own date: `about_start` and `about_end`, Unix seconds, [start, end). Archived sessions
are indexed again so their messages get the span (and the facts extracted from them)."""

from __future__ import annotations

import sqlite3

_REINDEX = (
    "DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_entries WHERE kind = 'message')",
    "DELETE FROM search_entries WHERE kind = 'message'",
    "DELETE FROM search_sources WHERE kind = 'message'",
    "UPDATE search_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'",
)


def apply(conn: sqlite3.Connection) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(search_entries)")}
    for column in ("about_start", "about_end"):
        if column not in columns:  # a database told to replay its migrations has them
            conn.execute(f"ALTER TABLE search_entries ADD COLUMN {column} REAL")
    for statement in _REINDEX:
        conn.execute(statement)
