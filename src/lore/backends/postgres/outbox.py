"""The outbox on PostgreSQL: the only SQL for deliveries, each public write one transaction.

Delivery is lease → deliver under the item's idempotency key → `done`. Any number of
workers lease at once: `FOR UPDATE SKIP LOCKED` hands each a disjoint set of rows
without waiting on the others. A worker killed while it holds a lease simply lets it
run out, and the next `lease` call gives the item to whoever asks; `done` only counts
for the owner still holding the lease, so two workers never both mark one delivery.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.ports.outbox import (
    MAX_ATTEMPTS,
    OutboxItem,
    map_strings,
    payload_from_json,
    payload_to_json,
)

__all__ = ["PostgresOutbox"]

_COLUMNS = "id, key, scope, channel, kind, payload, status, attempts, created_at, last_error"
_READY = (
    "status = 'pending' AND available_at <= %(now)s"
    " AND (lease_until IS NULL OR lease_until < %(now)s)"
)


class PostgresOutbox:
    redacted_noun = "delivery"  # forget everywhere's word for one

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every string of every item that `match`es through `redact` (forget
        everywhere); how many items (would) change."""
        changed = []
        for row in self.db.fetch_all("SELECT id, payload, last_error FROM outbox"):
            error = row["last_error"] or ""
            if not (match(json.dumps(row["payload"], ensure_ascii=False)) or match(error)):
                continue
            payload = map_strings(row["payload"], redact)
            changed.append(
                (Jsonb(payload), redact(error) if error else row["last_error"], row["id"])
            )
        if changed and not dry_run:
            with self.db.atomic() as conn, conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE outbox SET payload = %s, last_error = %s WHERE id = %s", changed
                )
        return len(changed)

    def put(self, item: OutboxItem, *, now: datetime) -> bool:
        """Queue an item; False when an item with its key was queued before."""
        with self.db.atomic() as conn:
            return self.put_in(conn, item, now=now)

    def put_in(self, conn: Connection, item: OutboxItem, *, now: datetime) -> bool:
        """`put` inside a transaction the caller holds."""
        cursor = conn.execute(_PUT, _put_args(item, now))
        return cursor.rowcount == 1

    def put_all_in(self, conn: Connection, items: Sequence[OutboxItem], *, now: datetime) -> None:
        """Queue many items in one round trip, inside the caller's transaction (a claim);
        keys queued before are skipped."""
        if items:
            with conn.cursor() as cursor:
                cursor.executemany(_PUT, [_put_args(item, now) for item in items])

    def lease(
        self,
        *,
        owner: str,
        now: datetime,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
        seconds: float = 60.0,
    ) -> list[OutboxItem]:
        """Claim ready items (of these scopes, or any) for `seconds`: pending, and not
        leased by another owner whose lease still runs. Rows another worker is leasing
        at this very moment are skipped, not waited for."""
        if scopes is not None and not scopes:
            return []
        args: dict[str, Any] = {
            "now": now,
            "owner": owner,
            "until": now + timedelta(seconds=seconds),
            "scopes": list(scopes or ()),
            "limit": limit,
        }
        scoped = "" if scopes is None else " AND scope = ANY(%(scopes)s)"
        with self.db.atomic() as conn:
            rows = conn.execute(
                "UPDATE outbox SET lease_owner = %(owner)s, lease_until = %(until)s"
                f" WHERE id IN (SELECT id FROM outbox WHERE {_READY}{scoped}"
                "  ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
                f" RETURNING {_COLUMNS}",
                args,
            ).fetchall()
        return sorted((_item(row) for row in rows), key=lambda item: item.id)

    def done(self, item_id: int, *, owner: str, now: datetime) -> bool:
        """Mark delivered; False when the lease was lost (another owner took over)."""
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE outbox SET status = 'delivered', delivered_at = %s, delivered_by = %s,"
                " lease_owner = NULL, lease_until = NULL"
                " WHERE id = %s AND status = 'pending' AND lease_owner = %s",
                (now, owner, item_id, owner),
            )
            return cursor.rowcount == 1

    def release(self, item_id: int, *, owner: str) -> None:
        """Give a leased item back untried (a delivery stopped before it began)."""
        with self.db.atomic() as conn:
            conn.execute(
                "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
                " WHERE id = %s AND status = 'pending' AND lease_owner = %s",
                (item_id, owner),
            )

    def end_leases(self, owners: Sequence[str]) -> int:
        """The leases these owners hold on pending items run out now; how many."""
        if not owners:
            return 0
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
                " WHERE status = 'pending' AND lease_owner = ANY(%s)",
                (list(owners),),
            )
            return cursor.rowcount

    def retry(self, item_id: int, *, owner: str, now: datetime, error: str, delay: float) -> None:
        """Give the item back after a failed delivery, ready again after `delay` seconds;
        after MAX_ATTEMPTS it is marked failed."""
        with self.db.atomic() as conn:
            conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = %s,"
                " available_at = %s, lease_owner = NULL, lease_until = NULL,"
                " status = CASE WHEN attempts + 1 >= %s THEN 'failed' ELSE status END"
                " WHERE id = %s AND status = 'pending' AND lease_owner = %s",
                (
                    error[:500],
                    _second(now) + timedelta(seconds=int(delay)),
                    MAX_ATTEMPTS,
                    item_id,
                    owner,
                ),
            )

    def ready_scopes(self, now: datetime) -> list[str]:
        """Scopes with items ready to lease now."""
        rows = self.db.fetch_all(f"SELECT DISTINCT scope FROM outbox WHERE {_READY}", {"now": now})
        return [str(row["scope"]) for row in rows]

    def next_ready(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending item (of one scope) becomes ready (leases included)."""
        sql = (
            "SELECT min(greatest(available_at, coalesce(lease_until, available_at))) AS at"
            " FROM outbox WHERE status = 'pending'"
        )
        row = (
            self.db.fetch_one(sql)
            if scope is None
            else self.db.fetch_one(sql + " AND scope = %s", (scope,))
        )
        return None if row is None else row["at"]

    def items(self, scope: str, *, status: str | None = None, limit: int = 100) -> list[OutboxItem]:
        """A scope's items, newest first."""
        rows = self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM outbox WHERE scope = %s"
            " AND status = coalesce(%s, status) ORDER BY id DESC LIMIT %s",
            (scope, status, limit),
        )
        return [_item(row) for row in rows]


_PUT = (
    "INSERT INTO outbox (key, scope, channel, kind, payload, created_at, available_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING"
)


def _put_args(item: OutboxItem, now: datetime) -> tuple[Any, ...]:
    at, payload = _second(now), Jsonb(payload_to_json(item.payload))
    return (item.key, item.scope, item.channel, item.kind, payload, at, at)


def _second(moment: datetime) -> datetime:
    """Whole seconds, as the SQLite outbox keeps its times (leases keep their fraction)."""
    if moment.tzinfo is None:
        raise ValueError("outbox times must be aware")
    return datetime.fromtimestamp(math.floor(moment.timestamp()), UTC)


def _item(row: DictRow) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        key=row["key"],
        scope=row["scope"],
        channel=row["channel"],
        kind=row["kind"],
        payload=payload_from_json(row["payload"]),
        status=row["status"],
        attempts=row["attempts"],
        created_at=row["created_at"],
        last_error=row["last_error"] or "",
    )
