"""The chat ledger on PostgreSQL: the only SQL for received updates and sent message ids,
each public write one transaction. Any number of workers claim at once: `FOR UPDATE SKIP
LOCKED` hands each its own updates. The rules are `lore.backends.chat_ledger_flow`
(shared with SQLite)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from lore.backends.chat_ledger_flow import ChatLedgerFlow, Claimed
from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.ports.chat_ledger import ConversationName

__all__ = ["PostgresChatLedger"]


class PostgresChatLedger(ChatLedgerFlow[Connection]):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def _writing(self) -> AbstractContextManager[Connection]:
        return self.db.atomic()

    def _reading(self) -> AbstractContextManager[Connection]:
        return self.db.connection()

    def _record(
        self,
        conn: Connection,
        channel: str,
        key: str,
        payload: dict[str, Any],
        now: datetime,
        owner: str,
        until: datetime,
    ) -> bool:
        cursor = conn.execute(
            "INSERT INTO chat_received (channel, key, payload, received_at, lease_owner,"
            " lease_until) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (channel, key, Jsonb(payload), now, owner, until),
        )
        return cursor.rowcount == 1

    def _extend(self, conn: Connection, channel: str, owner: str, until: datetime) -> int:
        cursor = conn.execute(
            "UPDATE chat_received SET lease_until = %s"
            " WHERE channel = %s AND NOT handled AND lease_owner = %s",
            (until, channel, owner),
        )
        return cursor.rowcount

    def _claim(
        self, conn: Connection, channel: str, owner: str, now: datetime, until: datetime, limit: int
    ) -> list[Claimed]:
        rows = conn.execute(
            "UPDATE chat_received SET lease_owner = %(owner)s, lease_until = %(until)s"
            " WHERE id IN (SELECT id FROM chat_received WHERE channel = %(channel)s"
            "  AND NOT handled AND (lease_until IS NULL OR lease_until < %(now)s)"
            "  ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
            " RETURNING id, key, payload, received_at",
            {"owner": owner, "until": until, "channel": channel, "now": now, "limit": limit},
        ).fetchall()
        return [
            (int(row["id"]), str(row["key"]), dict(row["payload"] or {}), row["received_at"])
            for row in rows
        ]

    def _free_owners(self, conn: Connection, channel: str, owners: Sequence[str]) -> int:
        cursor = conn.execute(
            "UPDATE chat_received SET lease_until = NULL"
            " WHERE channel = %s AND NOT handled AND lease_owner = ANY(%s)",
            (channel, list(owners)),
        )
        return cursor.rowcount

    def _unhandled(self, conn: Connection) -> list[tuple[int, dict[str, Any]]]:
        rows = conn.execute(
            "SELECT id, payload FROM chat_received WHERE NOT handled AND payload IS NOT NULL"
        )
        return [(int(row["id"]), dict(row["payload"])) for row in rows]

    def _rewrite(self, conn: Connection, changed: Sequence[tuple[int, dict[str, Any]]]) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE chat_received SET payload = %s WHERE id = %s AND NOT handled",
                [(Jsonb(payload), update_id) for update_id, payload in changed],
            )

    def _mark_handled(self, conn: Connection, channel: str, key: str) -> None:
        conn.execute(
            "UPDATE chat_received SET handled = true, payload = NULL, lease_owner = NULL,"
            " lease_until = NULL WHERE channel = %s AND key = %s",
            (channel, key),
        )

    def _note_sent(
        self, conn: Connection, channel: str, message_ids: Sequence[str], at: datetime
    ) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO chat_sent (channel, message_id, sent_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (channel, message_id) DO UPDATE SET sent_at = EXCLUDED.sent_at",
                [(channel, message_id, at) for message_id in message_ids],
            )

    def _was_sent(self, conn: Connection, channel: str, message_id: str) -> bool:
        row = conn.execute(
            "SELECT 1 AS found FROM chat_sent WHERE channel = %s AND message_id = %s",
            (channel, message_id),
        ).fetchone()
        return row is not None

    def _prune(self, conn: Connection, before: datetime) -> int:
        received = conn.execute(
            "DELETE FROM chat_received WHERE handled AND received_at < %s", (before,)
        ).rowcount
        sent = conn.execute("DELETE FROM chat_sent WHERE sent_at < %s", (before,)).rowcount
        return received + sent

    def _name_of(self, conn: Connection, scope: str) -> str | None:
        row = conn.execute("SELECT name FROM chat_names WHERE scope = %s", (scope,)).fetchone()
        return None if row is None else str(row["name"])

    def _keep_name(self, conn: Connection, scope: str, name: str, at: datetime) -> bool:
        cursor = conn.execute(
            "INSERT INTO chat_names (scope, name, named_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (scope) DO UPDATE SET name = EXCLUDED.name,"
            " named_at = EXCLUDED.named_at WHERE chat_names.name <> EXCLUDED.name",
            (scope, name, at),
        )
        return cursor.rowcount == 1

    def _names(self, conn: Connection) -> list[ConversationName]:
        rows = conn.execute("SELECT scope, name, named_at FROM chat_names ORDER BY scope")
        return [
            ConversationName(str(row["scope"]), str(row["name"]), row["named_at"]) for row in rows
        ]
