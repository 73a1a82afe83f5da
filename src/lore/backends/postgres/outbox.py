"""The outbox on PostgreSQL: the only SQL for deliveries, each public write one transaction.

Delivery is lease → deliver under the item's idempotency key → `done`. Any number of
workers lease at once: `FOR UPDATE SKIP LOCKED` hands each a disjoint set of rows
without waiting on the others. A worker killed while it holds a lease simply lets it
run out, and the next `lease` call gives the item to whoever asks; `done` only counts
for the owner still holding the lease, so two workers never both mark one delivery.
The rules are `lore.backends.outbox_flow` (shared with SQLite); the SQL is here.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from lore.backends.outbox_flow import NewItem, OutboxFlow, stored_item
from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.ports.outbox import OutboxItem, payload_from_json

__all__ = ["PostgresOutbox"]

_COLUMNS = "id, key, scope, channel, kind, payload, status, attempts, created_at, last_error"
_READY = (
    "status = 'pending' AND available_at <= %(now)s"
    " AND (lease_until IS NULL OR lease_until < %(now)s)"
)


class PostgresOutbox(OutboxFlow[Connection]):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def _writing(self) -> AbstractContextManager[Connection]:
        return self.db.atomic()

    def _reading(self) -> AbstractContextManager[Connection]:
        return self.db.connection()

    def _insert(self, conn: Connection, rows: Sequence[NewItem], at: datetime) -> int:
        with conn.cursor() as cursor:  # one round trip, however many (a claim's)
            cursor.executemany(
                "INSERT INTO outbox (key, scope, channel, kind, payload, created_at, available_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                [(*row[:4], Jsonb(row[4]), at, at) for row in rows],
            )
            return cursor.rowcount

    def _lease(
        self,
        conn: Connection,
        owner: str,
        now: datetime,
        until: datetime,
        scopes: Sequence[str] | None,
        limit: int,
    ) -> list[OutboxItem]:
        """Rows another worker is leasing at this very moment are skipped, not waited for."""
        args: dict[str, Any] = {
            "now": now,
            "owner": owner,
            "until": until,
            "scopes": list(scopes or ()),
            "limit": limit,
        }
        scoped = "" if scopes is None else " AND scope = ANY(%(scopes)s)"
        rows = conn.execute(
            "UPDATE outbox SET lease_owner = %(owner)s, lease_until = %(until)s"
            f" WHERE id IN (SELECT id FROM outbox WHERE {_READY}{scoped}"
            "  ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
            f" RETURNING {_COLUMNS}",
            args,
        ).fetchall()
        return [_item(row) for row in rows]

    def _finish(self, conn: Connection, item_id: int, owner: str, at: datetime) -> bool:
        cursor = conn.execute(
            "UPDATE outbox SET status = 'delivered', delivered_at = %s, delivered_by = %s,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = %s AND status = 'pending' AND lease_owner = %s",
            (at, owner, item_id, owner),
        )
        return cursor.rowcount == 1

    def _release(self, conn: Connection, item_id: int, owner: str) -> None:
        conn.execute(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
            " WHERE id = %s AND status = 'pending' AND lease_owner = %s",
            (item_id, owner),
        )

    def _free_owners(self, conn: Connection, owners: Sequence[str]) -> int:
        cursor = conn.execute(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
            " WHERE status = 'pending' AND lease_owner = ANY(%s)",
            (list(owners),),
        )
        return cursor.rowcount

    def _retry(
        self,
        conn: Connection,
        item_id: int,
        owner: str,
        error: str,
        ready: datetime,
        max_attempts: int,
    ) -> None:
        conn.execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = %s,"
            " available_at = %s, lease_owner = NULL, lease_until = NULL,"
            " status = CASE WHEN attempts + 1 >= %s THEN 'failed' ELSE status END"
            " WHERE id = %s AND status = 'pending' AND lease_owner = %s",
            (error, ready, max_attempts, item_id, owner),
        )

    def _ready_scopes(self, conn: Connection, now: datetime) -> list[str]:
        rows = conn.execute(f"SELECT DISTINCT scope FROM outbox WHERE {_READY}", {"now": now})
        return [str(row["scope"]) for row in rows]

    def _next_ready(self, conn: Connection, scope: str | None) -> datetime | None:
        sql = (
            "SELECT min(greatest(available_at, coalesce(lease_until, available_at))) AS at"
            " FROM outbox WHERE status = 'pending'"
        )
        cursor = (
            conn.execute(sql) if scope is None else conn.execute(sql + " AND scope = %s", (scope,))
        )
        row = cursor.fetchone()
        return None if row is None else row["at"]

    def _items(
        self, conn: Connection, scope: str, status: str | None, limit: int
    ) -> list[OutboxItem]:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE scope = %s"
            " AND status = coalesce(%s, status) ORDER BY id DESC LIMIT %s",
            (scope, status, limit),
        )
        return [_item(row) for row in rows]

    def _pending(self, conn: Connection) -> int:
        row = conn.execute("SELECT count(*) AS n FROM outbox WHERE status = 'pending'").fetchone()
        return 0 if row is None else int(row["n"])

    def _texts(self, conn: Connection) -> list[tuple[int, dict[str, Any], str | None]]:
        rows = conn.execute("SELECT id, payload, last_error FROM outbox")
        return [(int(row["id"]), row["payload"], row["last_error"]) for row in rows]

    def _rewrite(
        self, conn: Connection, changed: Sequence[tuple[int, dict[str, Any], str | None]]
    ) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE outbox SET payload = %s, last_error = %s WHERE id = %s",
                [(Jsonb(payload), error, item_id) for item_id, payload, error in changed],
            )


def _item(row: DictRow) -> OutboxItem:
    return stored_item(row, payload=payload_from_json(row["payload"]), created_at=row["created_at"])
