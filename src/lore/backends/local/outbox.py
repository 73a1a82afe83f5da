"""The outbox table: the only SQL for deliveries, each public write one transaction.

A lease is (owner, until): a process that dies holding one simply lets it run out, and
the next `lease` call hands the item to whoever asks. `done` only counts for the owner
still holding the lease, so two processes never both mark one delivery. The rules are
`lore.backends.outbox_flow` (shared with PostgreSQL); the SQL under it is here. Times
are whole seconds since the epoch, leases a fraction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from lore.backends.local.database import Database
from lore.backends.outbox_flow import NewItem, OutboxFlow, stored_item
from lore.ports.outbox import OutboxItem, payload_from_text

__all__ = ["LocalOutbox"]

_COLUMNS = "id, key, scope, channel, kind, payload, status, attempts, created_at, last_error"


class LocalOutbox(OutboxFlow[sqlite3.Connection]):
    def __init__(self, db: Database) -> None:
        self.db = db

    def _writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic()

    def _leasing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic(immediate=True)

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self.db.conn)

    def _insert(self, conn: sqlite3.Connection, rows: Sequence[NewItem], at: datetime) -> int:
        cursor = conn.executemany(
            "INSERT OR IGNORE INTO outbox (key, scope, channel, kind, payload, created_at,"
            " available_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(*row[:4], _json(row[4]), _ts(at), _ts(at)) for row in rows],
        )
        return cursor.rowcount

    def _lease(
        self,
        conn: sqlite3.Connection,
        owner: str,
        now: datetime,
        until: datetime,
        scopes: Sequence[str] | None,
        limit: int,
    ) -> list[OutboxItem]:
        where = "status = 'pending' AND available_at <= ? AND coalesce(lease_until, 0) < ?"
        args: list[object] = [_ts(now), now.timestamp()]
        if scopes is not None:
            where += f" AND scope IN ({','.join('?' * len(scopes))})"
            args += list(scopes)
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE {where} ORDER BY id LIMIT ?", (*args, limit)
        ).fetchall()
        conn.executemany(
            "UPDATE outbox SET lease_owner = ?, lease_until = ? WHERE id = ?",
            [(owner, until.timestamp(), row["id"]) for row in rows],
        )
        return [_item(row) for row in rows]

    def _finish(self, conn: sqlite3.Connection, item_id: int, owner: str, at: datetime) -> bool:
        cursor = conn.execute(
            "UPDATE outbox SET status = 'delivered', delivered_at = ?, delivered_by = ?,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = ? AND status = 'pending' AND lease_owner = ?",
            (_ts(at), owner, item_id, owner),
        )
        return cursor.rowcount == 1

    def _release(self, conn: sqlite3.Connection, item_id: int, owner: str) -> None:
        conn.execute(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
            " WHERE id = ? AND status = 'pending' AND lease_owner = ?",
            (item_id, owner),
        )

    def _free_owners(self, conn: sqlite3.Connection, owners: Sequence[str]) -> int:
        cursor = conn.execute(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
            f" WHERE status = 'pending' AND lease_owner IN ({','.join('?' * len(owners))})",
            tuple(owners),
        )
        return cursor.rowcount

    def _retry(
        self,
        conn: sqlite3.Connection,
        item_id: int,
        owner: str,
        error: str,
        ready: datetime,
        max_attempts: int,
    ) -> None:
        conn.execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?,"
            " available_at = ?, lease_owner = NULL, lease_until = NULL,"
            " status = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE status END"
            " WHERE id = ? AND status = 'pending' AND lease_owner = ?",
            (error, _ts(ready), max_attempts, item_id, owner),
        )

    def _ready_scopes(self, conn: sqlite3.Connection, now: datetime) -> list[str]:
        rows = conn.execute(
            "SELECT DISTINCT scope FROM outbox WHERE status = 'pending' AND available_at <= ?"
            " AND coalesce(lease_until, 0) < ?",
            (_ts(now), now.timestamp()),
        )
        return [str(row[0]) for row in rows]

    def _next_ready(self, conn: sqlite3.Connection, scope: str | None) -> datetime | None:
        sql = (
            "SELECT min(max(available_at, coalesce(lease_until, 0))) FROM outbox"
            " WHERE status = 'pending'"
        )
        row = (
            conn.execute(sql).fetchone()
            if scope is None
            else conn.execute(sql + " AND scope = ?", (scope,)).fetchone()
        )
        return None if row[0] is None else datetime.fromtimestamp(float(row[0]), UTC)

    def _items(
        self, conn: sqlite3.Connection, scope: str, status: str | None, limit: int
    ) -> list[OutboxItem]:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE scope = ? AND status = coalesce(?, status)"
            " ORDER BY id DESC LIMIT ?",
            (scope, status, limit),
        )
        return [_item(row) for row in rows]

    def _pending(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT count(*) FROM outbox WHERE status = 'pending'").fetchone()
        return int(row[0])

    def _texts(self, conn: sqlite3.Connection) -> list[tuple[int, Any, str | None]]:
        rows = conn.execute("SELECT id, payload, last_error FROM outbox")
        return [(int(row[0]), _loaded(row[1]), row[2]) for row in rows]

    def _rewrite(
        self, conn: sqlite3.Connection, changed: Sequence[tuple[int, Any, str | None]]
    ) -> None:
        conn.executemany(
            "UPDATE outbox SET payload = ?, last_error = ? WHERE id = ?",
            [(_json(payload), error, item_id) for item_id, payload, error in changed],
        )


def _loaded(text: str) -> Any:
    """A stored payload's JSON; a damaged one (not JSON) as its text, which forgetting
    redacts as it stands."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _json(payload: Any) -> str:
    """A payload as stored: JSON, or a damaged one's text (a str) as it stands."""
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)


def _ts(moment: datetime) -> int:
    return int(moment.timestamp())


def _item(row: sqlite3.Row) -> OutboxItem:
    created_at = datetime.fromtimestamp(row["created_at"], UTC)
    return stored_item(row, payload=payload_from_text(row["payload"]), created_at=created_at)
