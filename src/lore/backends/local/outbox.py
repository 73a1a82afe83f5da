"""The outbox table: the only SQL for deliveries, each public write one transaction.

A lease is (owner, until): a process that dies holding one simply lets it run out, and
the next `lease` call hands the item to whoever asks. `done` only counts for the owner
still holding the lease, so two processes never both mark one delivery.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from lore.backends.local.database import Database
from lore.ports.outbox import (
    MAX_ATTEMPTS,
    OutboxItem,
    map_strings,
    payload_from_text,
    payload_to_json,
)

__all__ = ["LocalOutbox"]

_COLUMNS = "id, key, scope, channel, kind, payload, status, attempts, created_at, last_error"


class LocalOutbox:
    redacted_noun = "delivery"  # forget everywhere's word for one

    def __init__(self, db: Database) -> None:
        self.db = db

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        rows = self.db.conn.execute("SELECT id, payload, last_error FROM outbox").fetchall()
        changed = []
        for row in rows:
            error = row[2] or ""
            if not (match(row[1]) or match(error)):
                continue
            try:
                text = json.dumps(map_strings(json.loads(row[1]), redact), ensure_ascii=False)
            except ValueError:  # an unreadable payload: its text is forgotten as it stands
                text = redact(row[1])
            changed.append((text, redact(error) if error else row[2], row[0]))
        if changed and not dry_run:
            with self.db.atomic() as conn:
                conn.executemany(
                    "UPDATE outbox SET payload = ?, last_error = ? WHERE id = ?", changed
                )
        return len(changed)

    def put(self, item: OutboxItem, *, now: datetime) -> bool:
        with self.db.atomic() as conn:
            return self.put_in(conn, item, now=now)

    def put_in(self, conn: sqlite3.Connection, item: OutboxItem, *, now: datetime) -> bool:
        """`put` inside a transaction the caller holds (a reminder claim)."""
        cursor = conn.execute(
            "INSERT OR IGNORE INTO outbox (key, scope, channel, kind, payload, created_at,"
            " available_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                item.key,
                item.scope,
                item.channel,
                item.kind,
                json.dumps(payload_to_json(item.payload), ensure_ascii=False),
                _ts(now),
                _ts(now),
            ),
        )
        return cursor.rowcount == 1

    def lease(
        self,
        *,
        owner: str,
        now: datetime,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
        seconds: float = 60.0,
    ) -> list[OutboxItem]:
        moment = now.timestamp()
        where = "status = 'pending' AND available_at <= ? AND coalesce(lease_until, 0) < ?"
        args: list[object] = [_ts(now), moment]
        if scopes is not None:
            if not scopes:
                return []
            where += f" AND scope IN ({','.join('?' * len(scopes))})"
            args += list(scopes)
        with self.db.atomic(immediate=True) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM outbox WHERE {where} ORDER BY id LIMIT ?",
                (*args, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE outbox SET lease_owner = ?, lease_until = ? WHERE id = ?",
                [(owner, moment + seconds, row["id"]) for row in rows],
            )
        return [_item(row) for row in rows]

    def done(self, item_id: int, *, owner: str, now: datetime) -> bool:
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE outbox SET status = 'delivered', delivered_at = ?, delivered_by = ?,"
                " lease_owner = NULL, lease_until = NULL"
                " WHERE id = ? AND status = 'pending' AND lease_owner = ?",
                (_ts(now), owner, item_id, owner),
            )
            return cursor.rowcount == 1

    def release(self, item_id: int, *, owner: str) -> None:
        with self.db.atomic() as conn:
            conn.execute(
                "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
                " WHERE id = ? AND status = 'pending' AND lease_owner = ?",
                (item_id, owner),
            )

    def end_leases(self, owners: Sequence[str]) -> int:
        if not owners:
            return 0
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE outbox SET lease_owner = NULL, lease_until = NULL"
                f" WHERE status = 'pending' AND lease_owner IN ({','.join('?' * len(owners))})",
                tuple(owners),
            )
            return cursor.rowcount

    def retry(self, item_id: int, *, owner: str, now: datetime, error: str, delay: float) -> None:
        with self.db.atomic() as conn:
            conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?,"
                " available_at = ?, lease_owner = NULL, lease_until = NULL,"
                " status = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE status END"
                " WHERE id = ? AND status = 'pending' AND lease_owner = ?",
                (error[:500], _ts(now) + int(delay), MAX_ATTEMPTS, item_id, owner),
            )

    def ready_scopes(self, now: datetime) -> list[str]:
        rows = self.db.conn.execute(
            "SELECT DISTINCT scope FROM outbox WHERE status = 'pending' AND available_at <= ?"
            " AND coalesce(lease_until, 0) < ?",
            (_ts(now), now.timestamp()),
        )
        return [str(row[0]) for row in rows]

    def next_ready(self, scope: str | None = None) -> datetime | None:
        sql = (
            "SELECT min(max(available_at, coalesce(lease_until, 0))) FROM outbox"
            " WHERE status = 'pending'"
        )
        row = (
            self.db.conn.execute(sql).fetchone()
            if scope is None
            else self.db.conn.execute(sql + " AND scope = ?", (scope,)).fetchone()
        )
        return None if row[0] is None else datetime.fromtimestamp(float(row[0]), UTC)

    def items(self, scope: str, *, status: str | None = None, limit: int = 100) -> list[OutboxItem]:
        where, args = "scope = ?", [scope]
        if status is not None:
            where += " AND status = ?"
            args.append(status)
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE {where} ORDER BY id DESC LIMIT ?",
            (*args, limit),
        )
        return [_item(row) for row in rows]


def _ts(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError("outbox times must be aware")
    return int(moment.timestamp())


def _item(row: sqlite3.Row) -> OutboxItem:
    return OutboxItem(
        id=row["id"],
        key=row["key"],
        scope=row["scope"],
        channel=row["channel"],
        kind=row["kind"],
        payload=payload_from_text(row["payload"]),
        status=row["status"],
        attempts=row["attempts"],
        created_at=datetime.fromtimestamp(row["created_at"], UTC),
        last_error=row["last_error"] or "",
    )
