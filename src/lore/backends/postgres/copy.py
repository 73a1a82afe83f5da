"""Copy a SQLite `lore.db` into an empty PostgreSQL database, without loss: memories
(every version, forgotten ones included, ids kept), their audit, reminders, the
outbox and scheduled tasks with their runs, in one transaction. Each table is then read
back from both sides and compared by count and content hash; a mismatch rolls the copy
back.

The search index is not copied: active memories are queued for indexing (by the
triggers, as they arrive), and notes and archived sessions are read again from their
files on the next sync, with vectors embedded afresh.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from lore.backends.local.database import Database
from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.errors import StoreError
from lore.text import index_terms

__all__ = ["COLUMNS", "TableCopy", "copy_sqlite", "table_digest"]

_TABLES = ("memories", "memory_audit", "reminders", "outbox", "tasks", "task_runs")


@dataclass(frozen=True)
class TableCopy:
    table: str
    source_rows: int
    target_rows: int
    source_hash: str
    target_hash: str

    @property
    def same(self) -> bool:
        return (self.source_rows, self.source_hash) == (self.target_rows, self.target_hash)


def copy_sqlite(source: Database, target: PostgresDatabase) -> list[TableCopy]:
    """Copy every row; raises StoreError (and copies nothing) when the target already
    holds data or a table does not read back the same."""
    rows = {table: _sqlite_rows(source.conn, table) for table in _TABLES}
    with target.atomic() as conn:
        for table in _TABLES:
            found = conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()
            if found is not None and found["n"]:
                raise StoreError(
                    f"the PostgreSQL database already holds {found['n']} rows in {table};"
                    " copy into an empty one"
                )
        _copy_memories(conn, rows["memories"])
        _insert(conn, "memory_audit", rows["memory_audit"], {"at": _iso, "detail": _json})
        _insert(conn, "reminders", rows["reminders"], dict.fromkeys(_REMINDER_TIMES, _time))
        _insert(conn, "outbox", rows["outbox"], {"payload": _json, **_OUTBOX_TIMES})
        _insert(conn, "tasks", rows["tasks"], dict.fromkeys(_TASK_TIMES, _time))
        _insert(conn, "task_runs", rows["task_runs"], {"late": bool, **_RUN_TIMES})
        for table in _TABLES:
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"
                f" coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
            )
        report = [
            TableCopy(
                table,
                len(rows[table]),
                len(back := _postgres_rows(conn, table)),
                table_digest(table, rows[table]),
                table_digest(table, back),
            )
            for table in _TABLES
        ]
        wrong = [copy.table for copy in report if not copy.same]
        if wrong:
            raise StoreError(f"the copy does not read back the same in {', '.join(wrong)}")
    return report


# -- reading --------------------------------------------------------------------------------

COLUMNS = {
    "memories": (
        "id, scope, content, kind, keywords, author, source_session, source_message,"
        " created_at, updated_at, expires_at, status, superseded_by, content_key"
    ),
    "memory_audit": "id, memory_id, scope, action, actor, via, at, detail",
    "reminders": (
        "id, scope, author, text, due_at, timezone, recurrence, anchor_at, status, channel,"
        " session_id, created_at, delivered_at, delivery_count, cancelled_at, cancelled_by"
    ),
    "outbox": (
        "id, key, scope, channel, kind, payload, status, created_at, available_at,"
        " lease_owner, lease_until, attempts, delivered_at, delivered_by, last_error"
    ),
    "tasks": (
        "id, scope, author, prompt, due_at, timezone, recurrence, anchor_at, status, channel,"
        " trust, max_rounds, max_seconds, created_at, run_count, cancelled_at"
    ),
    "task_runs": (
        "id, task_id, key, scope, due_at, late, status, attempts, lease_owner, lease_until,"
        " error, created_at, finished_at"
    ),
}
_REMINDER_TIMES = ("due_at", "anchor_at", "created_at", "delivered_at", "cancelled_at")
_TASK_TIMES = ("due_at", "anchor_at", "created_at", "cancelled_at")
_SECONDS = ("created_at", "available_at", "lease_until", "delivered_at")


def _sqlite_rows(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    try:
        cursor = conn.execute(f"SELECT {COLUMNS[table]} FROM {table} ORDER BY id")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"lore.db has no usable {table} table: {exc}") from exc
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _postgres_rows(conn: Connection, table: str) -> list[dict[str, Any]]:
    return list(conn.execute(f"SELECT {COLUMNS[table]} FROM {table} ORDER BY id"))


# -- writing --------------------------------------------------------------------------------

Convert = Callable[[Any], Any]


def _json(value: Any) -> Any:
    return None if value is None else Jsonb(json.loads(value))


def _time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


_OUTBOX_TIMES: dict[str, Convert] = dict.fromkeys(_SECONDS, _time)
_RUN_TIMES: dict[str, Convert] = dict.fromkeys(
    ("due_at", "lease_until", "created_at", "finished_at"), _time
)


def _insert(
    conn: Connection, table: str, rows: Sequence[dict[str, Any]], convert: dict[str, Convert]
) -> None:
    if not rows:
        return
    columns = list(rows[0])
    marks = ", ".join(f"%({c})s" for c in columns)
    with conn.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) OVERRIDING SYSTEM VALUE VALUES ({marks})",
            [{k: convert.get(k, _same)(v) for k, v in row.items()} for row in rows],
        )


def _same(value: Any) -> Any:
    return value


def _copy_memories(conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
    prepared = []
    links = []
    for row in rows:
        live = row["status"] == "active"
        terms = index_terms(row["content"]) if live else None
        keywords = json.loads(row["keywords"])
        extra = " ".join(f"{t.words} {t.grams}" for t in map(index_terms, keywords))
        prepared.append(
            {
                **row,
                "keywords": Jsonb(keywords),
                "superseded_by": None,  # set below: it points at a later row
                "created_at": datetime.fromisoformat(row["created_at"]),
                "updated_at": datetime.fromisoformat(row["updated_at"]),
                "expires_at": _iso(row["expires_at"]),
                "words": terms.words if terms else "",
                "grams": terms.grams if terms else "",
                "extra": extra if live else "",
                "live": live,
            }
        )
        if row["superseded_by"] is not None:
            links.append({"id": row["id"], "later": row["superseded_by"]})
    if not prepared:
        return
    columns = COLUMNS["memories"]
    values = ", ".join(f"%({c.strip()})s" for c in columns.split(","))
    with conn.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO memories ({columns}, terms) VALUES ({values}, CASE WHEN %(live)s THEN"
            " setweight(to_tsvector('lore_terms', %(words)s), 'A')"
            " || setweight(to_tsvector('lore_terms', %(grams)s), 'B')"
            " || setweight(to_tsvector('lore_terms', %(extra)s), 'C') END)",
            prepared,
        )
        cursor.executemany("UPDATE memories SET superseded_by = %(later)s WHERE id = %(id)s", links)


def _iso(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


# -- comparing ------------------------------------------------------------------------------


def table_digest(table: str, rows: Sequence[dict[str, Any]]) -> str:
    """One hash of a table's rows in a form both databases agree on."""
    digest = hashlib.sha256()
    for row in rows:
        canonical = [_canonical(k, v) for k, v in row.items()]
        digest.update(json.dumps(canonical, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


def _canonical(column: str, value: Any) -> Any:
    if column == "late":  # SQLite keeps 0/1, PostgreSQL a boolean
        return bool(value)
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str) and column in ("keywords", "detail", "payload"):
        return json.loads(value)  # SQLite keeps JSON as text, PostgreSQL as jsonb
    if isinstance(value, str) and column in ("created_at", "updated_at", "expires_at", "at"):
        return datetime.fromisoformat(value).timestamp()
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and column.endswith(("_at", "_until"))
    ):
        return float(value)
    return value
