"""Each search entry keeps, beside when it was said (`at`), the span of time it is about
when its text names one ("last week", "昨天", "в прошлом году"), resolved against its
own date: `about_start` and `about_end`, Unix seconds, [start, end). Entries written from
now on carry it; entries indexed before get it from `lore index rebuild` (not forced
here: re-indexing a large archive means embedding every message again)."""

from __future__ import annotations

import sqlite3


def apply(conn: sqlite3.Connection) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(search_entries)")}
    for column in ("about_start", "about_end"):
        if column not in columns:  # a database told to replay its migrations has them
            conn.execute(f"ALTER TABLE search_entries ADD COLUMN {column} REAL")
