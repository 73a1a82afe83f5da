"""The chat ledger in `lore.db`: the only SQL for received updates and sent message ids,
each public write one transaction. The rules are `lore.backends.chat_ledger_flow`
(shared with PostgreSQL); times are seconds since the epoch."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from lore.backends.chat_ledger_flow import ChatLedgerFlow, Claimed
from lore.backends.local.database import Database
from lore.ports.chat_ledger import ConversationName

__all__ = ["LocalChatLedger"]


class LocalChatLedger(ChatLedgerFlow[sqlite3.Connection]):
    def __init__(self, db: Database) -> None:
        self.db = db

    def _writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic()

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self.db.conn)

    def _record(
        self,
        conn: sqlite3.Connection,
        channel: str,
        key: str,
        payload: dict[str, Any],
        now: datetime,
        owner: str,
        until: datetime,
    ) -> bool:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO chat_received (channel, key, payload, received_at,"
            " lease_owner, lease_until) VALUES (?, ?, ?, ?, ?, ?)",
            (channel, key, _json(payload), now.timestamp(), owner, until.timestamp()),
        )
        return cursor.rowcount == 1

    def _extend(self, conn: sqlite3.Connection, channel: str, owner: str, until: datetime) -> int:
        cursor = conn.execute(
            "UPDATE chat_received SET lease_until = ?"
            " WHERE channel = ? AND handled = 0 AND lease_owner = ?",
            (until.timestamp(), channel, owner),
        )
        return cursor.rowcount

    def _claim(
        self,
        conn: sqlite3.Connection,
        channel: str,
        owner: str,
        now: datetime,
        until: datetime,
        limit: int,
    ) -> list[Claimed]:
        rows = conn.execute(
            "SELECT id, key, payload, received_at FROM chat_received"
            " WHERE channel = ? AND handled = 0 AND coalesce(lease_until, 0) < ?"
            " ORDER BY id LIMIT ?",
            (channel, now.timestamp(), limit),
        ).fetchall()
        conn.executemany(
            "UPDATE chat_received SET lease_owner = ?, lease_until = ? WHERE id = ?",
            [(owner, until.timestamp(), row["id"]) for row in rows],
        )
        return [
            (
                int(row["id"]),
                str(row["key"]),
                json.loads(row["payload"] or "{}"),
                datetime.fromtimestamp(row["received_at"], UTC),
            )
            for row in rows
        ]

    def _free_owners(self, conn: sqlite3.Connection, channel: str, owners: Sequence[str]) -> int:
        cursor = conn.execute(
            "UPDATE chat_received SET lease_until = NULL WHERE channel = ? AND handled = 0"
            f" AND lease_owner IN ({','.join('?' * len(owners))})",
            (channel, *owners),
        )
        return cursor.rowcount

    def _unhandled(self, conn: sqlite3.Connection) -> list[tuple[int, dict[str, Any]]]:
        rows = conn.execute(
            "SELECT id, payload FROM chat_received WHERE handled = 0 AND payload IS NOT NULL"
        )
        return [(int(row["id"]), json.loads(row["payload"])) for row in rows]

    def _rewrite(
        self, conn: sqlite3.Connection, changed: Sequence[tuple[int, dict[str, Any]]]
    ) -> None:
        conn.executemany(
            "UPDATE chat_received SET payload = ? WHERE id = ? AND handled = 0",
            [(_json(payload), update_id) for update_id, payload in changed],
        )

    def _mark_handled(self, conn: sqlite3.Connection, channel: str, key: str) -> None:
        conn.execute(
            "UPDATE chat_received SET handled = 1, payload = NULL, lease_owner = NULL,"
            " lease_until = NULL WHERE channel = ? AND key = ?",
            (channel, key),
        )

    def _note_sent(
        self, conn: sqlite3.Connection, channel: str, message_ids: Sequence[str], at: datetime
    ) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO chat_sent (channel, message_id, sent_at) VALUES (?, ?, ?)",
            [(channel, message_id, at.timestamp()) for message_id in message_ids],
        )

    def _was_sent(self, conn: sqlite3.Connection, channel: str, message_id: str) -> bool:
        row = conn.execute(
            "SELECT 1 FROM chat_sent WHERE channel = ? AND message_id = ?", (channel, message_id)
        ).fetchone()
        return row is not None

    def _prune(self, conn: sqlite3.Connection, before: datetime) -> int:
        moment = before.timestamp()
        received = conn.execute(
            "DELETE FROM chat_received WHERE handled = 1 AND received_at < ?", (moment,)
        ).rowcount
        sent = conn.execute("DELETE FROM chat_sent WHERE sent_at < ?", (moment,)).rowcount
        return received + sent

    def _name_of(self, conn: sqlite3.Connection, scope: str) -> str | None:
        row = conn.execute("SELECT name FROM chat_names WHERE scope = ?", (scope,)).fetchone()
        return None if row is None else str(row["name"])

    def _keep_name(self, conn: sqlite3.Connection, scope: str, name: str, at: datetime) -> bool:
        cursor = conn.execute(
            "INSERT INTO chat_names (scope, name, named_at) VALUES (?, ?, ?)"
            " ON CONFLICT (scope) DO UPDATE SET name = excluded.name,"
            " named_at = excluded.named_at WHERE chat_names.name <> excluded.name",
            (scope, name, at.timestamp()),
        )
        return cursor.rowcount == 1

    def _names(self, conn: sqlite3.Connection) -> list[ConversationName]:
        rows = conn.execute("SELECT scope, name, named_at FROM chat_names ORDER BY scope")
        return [
            ConversationName(
                str(row["scope"]), str(row["name"]), datetime.fromtimestamp(row["named_at"], UTC)
            )
            for row in rows
        ]


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)
