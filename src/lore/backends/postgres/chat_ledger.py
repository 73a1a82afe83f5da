"""The chat ledger on PostgreSQL: the only SQL for received updates and sent message ids,
each public write one transaction. Any number of workers claim at once: `FOR UPDATE SKIP
LOCKED` hands each its own updates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb

from lore.backends.postgres.database import PostgresDatabase
from lore.ports.chat_ledger import Received, redact_payload

__all__ = ["PostgresChatLedger"]


class PostgresChatLedger:
    redacted_noun = "chat message not yet answered"  # forget everywhere's word for one

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def receive(
        self,
        channel: str,
        key: str,
        payload: dict[str, Any],
        *,
        owner: str,
        now: datetime,
        seconds: float,
    ) -> bool:
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "INSERT INTO chat_received (channel, key, payload, received_at, lease_owner,"
                " lease_until) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (channel, key, Jsonb(payload), now, owner, now + timedelta(seconds=seconds)),
            )
            return cursor.rowcount == 1

    def renew(self, channel: str, *, owner: str, now: datetime, seconds: float) -> int:
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE chat_received SET lease_until = %s"
                " WHERE channel = %s AND NOT handled AND lease_owner = %s",
                (now + timedelta(seconds=seconds), channel, owner),
            )
            return cursor.rowcount

    def claim(
        self, channel: str, *, owner: str, now: datetime, seconds: float, limit: int = 100
    ) -> list[Received]:
        with self.db.atomic() as conn:
            rows = conn.execute(
                "UPDATE chat_received SET lease_owner = %(owner)s, lease_until = %(until)s"
                " WHERE id IN (SELECT id FROM chat_received WHERE channel = %(channel)s"
                "  AND NOT handled AND (lease_until IS NULL OR lease_until < %(now)s)"
                "  ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
                " RETURNING id, key, payload, received_at",
                {
                    "owner": owner,
                    "until": now + timedelta(seconds=seconds),
                    "channel": channel,
                    "now": now,
                    "limit": limit,
                },
            ).fetchall()
        rows.sort(key=lambda row: int(row["id"]))
        return [
            Received(channel, str(row["key"]), dict(row["payload"] or {}), row["received_at"])
            for row in rows
        ]

    def end_leases(self, channel: str, owners: Sequence[str]) -> int:
        if not owners:
            return 0
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE chat_received SET lease_until = NULL"
                " WHERE channel = %s AND NOT handled AND lease_owner = ANY(%s)",
                (channel, list(owners)),
            )
            return cursor.rowcount

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        changed = []
        for row in self.db.fetch_all(
            "SELECT id, payload FROM chat_received WHERE NOT handled AND payload IS NOT NULL"
        ):
            payload = redact_payload(dict(row["payload"]), match, redact)
            if payload is not None:
                changed.append((Jsonb(payload), row["id"]))
        if changed and not dry_run:
            with self.db.atomic() as conn, conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE chat_received SET payload = %s WHERE id = %s AND NOT handled",
                    changed,
                )
        return len(changed)

    def handled(self, channel: str, key: str) -> None:
        with self.db.atomic() as conn:
            conn.execute(
                "UPDATE chat_received SET handled = true, payload = NULL, lease_owner = NULL,"
                " lease_until = NULL WHERE channel = %s AND key = %s",
                (channel, key),
            )

    def note_sent(self, channel: str, message_ids: Sequence[str], *, now: datetime) -> None:
        if not message_ids:
            return
        with self.db.atomic() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO chat_sent (channel, message_id, sent_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (channel, message_id) DO UPDATE SET sent_at = EXCLUDED.sent_at",
                [(channel, message_id, now) for message_id in message_ids],
            )

    def was_sent(self, channel: str, message_id: str) -> bool:
        row = self.db.fetch_one(
            "SELECT 1 AS found FROM chat_sent WHERE channel = %s AND message_id = %s",
            (channel, message_id),
        )
        return row is not None

    def prune(self, *, before: datetime) -> int:
        with self.db.atomic() as conn:
            received = conn.execute(
                "DELETE FROM chat_received WHERE handled AND received_at < %s", (before,)
            ).rowcount
            sent = conn.execute("DELETE FROM chat_sent WHERE sent_at < %s", (before,)).rowcount
        return received + sent
