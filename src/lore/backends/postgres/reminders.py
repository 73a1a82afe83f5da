"""Reminders on PostgreSQL: the only SQL for reminders, each public write one transaction.

`claim_due` is where many workers meet: it selects due rows `FOR UPDATE SKIP LOCKED`,
so concurrent claims take disjoint rows without waiting for each other, and a row
another worker has just claimed no longer matches (`status`, `due_at` changed). In the
same transaction each occurrence is advanced (a one-shot becomes delivered, a recurring
one moves to its next time) and put into the outbox under its idempotency key, so it
is neither lost nor delivered twice, whichever worker dies when. The rules are
`lore.backends.reminder_flow` (shared with SQLite); the SQL under it is here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime

from psycopg.rows import DictRow

from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.backends.postgres.notify import Listener, notify
from lore.backends.postgres.outbox import PostgresOutbox
from lore.backends.reminder_flow import COLUMNS, ReminderFlow, stored_reminder
from lore.ports.reminders import Reminder

__all__ = ["PostgresReminderStore"]


class PostgresReminderStore(ReminderFlow[Connection]):
    def __init__(self, db: PostgresDatabase, outbox: PostgresOutbox | None = None) -> None:
        super().__init__(outbox or PostgresOutbox(db))
        self.db = db
        self._listening: Listener | None = None
        self._tag = uuid.uuid4().hex  # on this store's notifications, which it skips

    def close(self) -> None:
        """Stop listening for reminders added elsewhere."""
        if self._listening is not None:
            self._listening.close()
            self._listening = None

    def _listen(self) -> None:
        """LISTEN on this database: every worker's adds are heard."""
        if self._listening is None:
            self._listening = Listener(self.db.url, self._heard, skip=self._tag)
            self._listening.start()

    def _announce(self, conn: Connection) -> None:
        notify(conn, self._tag)  # every other store's scheduler, when this commits

    # -- the SQL of the flow --------------------------------------------------------

    def _writing(self) -> AbstractContextManager[Connection]:
        return self.db.atomic()

    def _reading(self) -> AbstractContextManager[Connection]:
        return self.db.connection()

    def _insert(self, conn: Connection, new: Reminder) -> Reminder:
        row = conn.execute(
            "INSERT INTO reminders (scope, author, text, due_at, timezone, recurrence,"
            " anchor_at, channel, session_id, created_at)"
            f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {COLUMNS}",
            (new.scope, new.author, new.text, new.due_at, new.timezone, new.recurrence,
             new.anchor_at, new.channel, new.session_id, new.created_at),
        ).fetchone()  # fmt: skip
        assert row is not None
        return _row(row)

    def _find(self, conn: Connection, reminder_id: int, *, lock: bool) -> Reminder | None:
        row = conn.execute(
            f"SELECT {COLUMNS} FROM reminders WHERE id = %s{' FOR UPDATE' if lock else ''}",
            (reminder_id,),
        ).fetchone()
        return None if row is None else _row(row)

    def _cancel(self, conn: Connection, reminder_id: int, by: str, at: datetime) -> Reminder:
        row = conn.execute(
            "UPDATE reminders SET status = 'cancelled', cancelled_at = %s, cancelled_by = %s"
            f" WHERE id = %s RETURNING {COLUMNS}",
            (at, by, reminder_id),
        ).fetchone()
        assert row is not None
        return _row(row)

    def _due(
        self, conn: Connection, moment: datetime, scope: str | None, limit: int, *, claim: bool
    ) -> list[Reminder]:
        """A claim skips the rows another worker is claiming, rather than waiting."""
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM reminders WHERE status = 'pending' AND due_at <= %s"
            f"{_SCOPED if scope is not None else ''} ORDER BY due_at LIMIT %s"
            f"{' FOR UPDATE SKIP LOCKED' if claim else ''}",
            (moment, *((scope,) if scope is not None else ()), limit),
        ).fetchall()
        return [_row(row) for row in rows]

    def _advance(
        self,
        conn: Connection,
        finished: Sequence[int],
        moved: Sequence[tuple[int, datetime]],
        at: datetime,
    ) -> None:
        # One round trip each, however many were claimed (the rows are locked already).
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE reminders SET status = 'delivered', delivered_at = %s,"
                " delivery_count = delivery_count + 1 WHERE id = %s",
                [(at, reminder_id) for reminder_id in finished],
            )
            cursor.executemany(
                "UPDATE reminders SET due_at = %s, delivered_at = %s,"
                " delivery_count = delivery_count + 1 WHERE id = %s",
                [(due, at, reminder_id) for reminder_id, due in moved],
            )

    def _soonest(self, conn: Connection, scope: str | None) -> datetime | None:
        """One index seek."""
        sql = "SELECT min(due_at) AS at FROM reminders WHERE status = 'pending'"
        cursor = conn.execute(sql) if scope is None else conn.execute(sql + _SCOPED, (scope,))
        row = cursor.fetchone()
        return None if row is None else row["at"]

    def _texts(self, conn: Connection) -> Sequence[tuple[int, str]]:
        rows = conn.execute("SELECT id, text FROM reminders")
        return [(int(row["id"]), str(row["text"])) for row in rows]

    def _rewrite(self, conn: Connection, changed: Sequence[tuple[int, str]]) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE reminders SET text = %s WHERE id = %s", [(text, i) for i, text in changed]
            )

    def _of_scope(
        self, conn: Connection, scope: str, include_done: bool, limit: int
    ) -> list[Reminder]:
        statuses = "" if include_done else "AND status = 'pending' "
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM reminders WHERE scope = %s {statuses}"
            "ORDER BY status != 'pending', CASE WHEN status = 'pending' THEN due_at END,"
            " due_at DESC LIMIT %s",
            (scope, limit),
        ).fetchall()
        return [_row(row) for row in rows]


_SCOPED = " AND scope = %s"  # by a literal, so the (scope, status, due_at) index serves it


def _row(row: DictRow) -> Reminder:
    return stored_reminder(row, lambda at: at)
