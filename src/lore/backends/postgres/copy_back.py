"""Copy a PostgreSQL database's tables back into an empty SQLite `lore.db`, without loss:
memories (every version, ids kept, their word index), their audit, reminders and the
outbox, in one transaction. Each table is then read back and compared with the source by
count and content hash (the hash `copy_sqlite` prints); a mismatch rolls it back. SQLite
keeps reminder and outbox times in whole seconds, as its own store writes them, so the
source is hashed as SQLite can hold it: those times without their fraction of a second.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

from lore.backends.local.database import Database
from lore.backends.local.memories import _scope_tag as scope_tag  # the SQLite word index's
from lore.backends.postgres.copy import COLUMNS, TableCopy, table_digest
from lore.backends.postgres.database import PostgresDatabase
from lore.errors import StoreError
from lore.ports.memories import iso
from lore.text import index_terms

__all__ = ["copy_to_sqlite"]

_TABLES = ("memories", "memory_audit", "reminders", "outbox", "tasks", "task_runs")

Convert = Callable[[Any], Any]


def _text(value: Any) -> Any:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else iso(value)


def _seconds(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


def _real(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


_CONVERT: dict[str, dict[str, Convert]] = {
    "memories": {
        "keywords": _text,
        "created_at": _iso,
        "updated_at": _iso,
        "expires_at": _iso,
    },
    "memory_audit": {"at": _iso, "detail": _text},
    "reminders": dict.fromkeys(
        ("due_at", "anchor_at", "created_at", "delivered_at", "cancelled_at"), _seconds
    ),
    "outbox": {
        "payload": _text,
        "created_at": _seconds,
        "available_at": _seconds,
        "delivered_at": _seconds,
        "lease_until": _real,
    },
    "tasks": dict.fromkeys(("due_at", "anchor_at", "created_at", "cancelled_at"), _seconds),
    "task_runs": {
        "late": int,
        "due_at": _seconds,
        "created_at": _seconds,
        "finished_at": _seconds,
        "lease_until": _real,
    },
}


def copy_to_sqlite(source: PostgresDatabase, target: Database) -> list[TableCopy]:
    """Copy every row; raises StoreError (and copies nothing) when the target already
    holds data or a table does not read back the same."""
    with source.connection() as pg:
        rows = {
            table: list(pg.execute(f"SELECT {COLUMNS[table]} FROM {table} ORDER BY id"))
            for table in _TABLES
        }
    converted = {
        table: [{k: _CONVERT[table].get(k, _same)(v) for k, v in row.items()} for row in found]
        for table, found in rows.items()
    }
    report = []
    with target.atomic() as conn:
        for table in _TABLES:
            found = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if found:
                raise StoreError(
                    f"{target.path} already holds {found} rows in {table}; copy into an empty one"
                )
        for table in _TABLES:
            _insert(conn, table, converted[table])
        for table in _TABLES:
            names = COLUMNS[table]
            back = conn.execute(f"SELECT {names} FROM {table} ORDER BY id")
            columns = [d[0] for d in back.description]
            read = [dict(zip(columns, row, strict=True)) for row in back]
            report.append(
                TableCopy(
                    table,
                    len(rows[table]),
                    len(read),
                    table_digest(table, converted[table]),
                    table_digest(table, read),
                )
            )
        wrong = [copy.table for copy in report if not copy.same]
        if wrong:
            raise StoreError(f"the copy does not read back the same in {', '.join(wrong)}")
    return report


def _same(value: Any) -> Any:
    return value


def _insert(conn: sqlite3.Connection, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    later = {}
    if table == "memories":  # a version points at a later row: linked once all are in
        later = {row["id"]: row["superseded_by"] for row in rows if row["superseded_by"]}
        rows = [{**row, "superseded_by": None} for row in rows]
    columns = list(rows[0])
    marks = ", ".join(f":{c}" for c in columns)
    conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
    if table != "memories":
        return
    conn.executemany(
        "UPDATE memories SET superseded_by = ? WHERE id = ?",
        [(to, memory_id) for memory_id, to in later.items()],
    )
    for row in rows:
        if row["status"] != "active":
            continue  # the word index holds active memories only
        terms = index_terms(row["content"])
        keywords = " ".join(
            f"{t.words} {t.grams}" for t in map(index_terms, json.loads(row["keywords"]))
        )
        conn.execute(
            "INSERT INTO memory_fts (rowid, scope_tag, words, grams, keywords)"
            " VALUES (?, ?, ?, ?, ?)",
            (row["id"], scope_tag(row["scope"]), terms.words, terms.grams, keywords),
        )
