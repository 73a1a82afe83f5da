"""The chat ledger in `lore.db`: the only SQL for received updates and sent message ids,
each public write one transaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from lore.backends.local.database import Database
from lore.ports.chat_ledger import Received, redact_payload

__all__ = ["LocalChatLedger"]


class LocalChatLedger:
    redacted_noun = "chat message not yet answered"  # forget everywhere's word for one

    def __init__(self, db: Database) -> None:
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
        moment = _ts(now)
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO chat_received (channel, key, payload, received_at,"
                " lease_owner, lease_until) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    channel,
                    key,
                    json.dumps(payload, ensure_ascii=False),
                    moment,
                    owner,
                    moment + seconds,
                ),  # fmt: skip
            )
            return cursor.rowcount == 1

    def renew(self, channel: str, *, owner: str, now: datetime, seconds: float) -> int:
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE chat_received SET lease_until = ?"
                " WHERE channel = ? AND handled = 0 AND lease_owner = ?",
                (_ts(now) + seconds, channel, owner),
            )
            return cursor.rowcount

    def claim(
        self, channel: str, *, owner: str, now: datetime, seconds: float, limit: int = 100
    ) -> list[Received]:
        moment = _ts(now)
        with self.db.atomic() as conn:
            rows = conn.execute(
                "SELECT id, key, payload, received_at FROM chat_received"
                " WHERE channel = ? AND handled = 0 AND coalesce(lease_until, 0) < ?"
                " ORDER BY id LIMIT ?",
                (channel, moment, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE chat_received SET lease_owner = ?, lease_until = ? WHERE id = ?",
                [(owner, moment + seconds, row["id"]) for row in rows],
            )
        return [
            Received(
                channel,
                str(row["key"]),
                json.loads(row["payload"] or "{}"),
                datetime.fromtimestamp(row["received_at"], UTC),
            )
            for row in rows
        ]

    def end_leases(self, channel: str, owners: Sequence[str]) -> int:
        if not owners:
            return 0
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE chat_received SET lease_until = NULL WHERE channel = ? AND handled = 0"
                f" AND lease_owner IN ({','.join('?' * len(owners))})",
                (channel, *owners),
            )
            return cursor.rowcount

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        rows = self.db.conn.execute(
            "SELECT id, payload FROM chat_received WHERE handled = 0 AND payload IS NOT NULL"
        ).fetchall()
        changed = []
        for row in rows:
            payload = redact_payload(json.loads(row["payload"]), match, redact)
            if payload is not None:
                changed.append((json.dumps(payload, ensure_ascii=False), row["id"]))
        if changed and not dry_run:
            with self.db.atomic() as conn:
                conn.executemany(
                    "UPDATE chat_received SET payload = ? WHERE id = ? AND handled = 0", changed
                )
        return len(changed)

    def handled(self, channel: str, key: str) -> None:
        with self.db.atomic() as conn:
            conn.execute(
                "UPDATE chat_received SET handled = 1, payload = NULL, lease_owner = NULL,"
                " lease_until = NULL WHERE channel = ? AND key = ?",
                (channel, key),
            )

    def note_sent(self, channel: str, message_ids: Sequence[str], *, now: datetime) -> None:
        if not message_ids:
            return
        with self.db.atomic() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO chat_sent (channel, message_id, sent_at) VALUES (?, ?, ?)",
                [(channel, message_id, _ts(now)) for message_id in message_ids],
            )

    def was_sent(self, channel: str, message_id: str) -> bool:
        row = self.db.conn.execute(
            "SELECT 1 FROM chat_sent WHERE channel = ? AND message_id = ?", (channel, message_id)
        ).fetchone()
        return row is not None

    def prune(self, *, before: datetime) -> int:
        moment = _ts(before)
        with self.db.atomic() as conn:
            received = conn.execute(
                "DELETE FROM chat_received WHERE handled = 1 AND received_at < ?", (moment,)
            ).rowcount
            sent = conn.execute("DELETE FROM chat_sent WHERE sent_at < ?", (moment,)).rowcount
        return received + sent


def _ts(moment: datetime) -> float:
    if moment.tzinfo is None:
        raise ValueError("chat ledger times must be aware")
    return moment.timestamp()
