"""The reminders table: the only SQL for reminders, each public write one transaction.

`claim_due` is the heart of exactly-once delivery: inside one BEGIN IMMEDIATE
transaction it finds what is due (by the (status, due_at) index) and marks it, a
one-shot as delivered, a recurring one moved to its next occurrence after now. A second
scheduler on the same database waits for the write lock and then finds nothing left.
The rules are `lore.backends.reminder_flow` (shared with PostgreSQL); the SQL under it is
here. Times are whole seconds since the epoch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

from lore.backends.local.database import Database
from lore.backends.local.doorbell import Doorbell, ring
from lore.backends.local.outbox import LocalOutbox
from lore.backends.reminder_flow import COLUMNS, ReminderFlow, stored_reminder
from lore.ports.reminders import Reminder

__all__ = ["SQLiteReminderStore"]


class SQLiteReminderStore(ReminderFlow[sqlite3.Connection]):
    def __init__(self, db: Database, outbox: LocalOutbox | None = None) -> None:
        super().__init__(outbox or LocalOutbox(db))
        self.db = db
        self._doorbell: Doorbell | None = None

    def close(self) -> None:
        """Stop listening for reminders added elsewhere."""
        if self._doorbell is not None:
            self._doorbell.close()
            self._doorbell = None

    @property
    def _home(self) -> Path | None:
        path = self.db.path
        return path.parent if isinstance(path, Path) else None

    def _listen(self) -> None:
        """The home's doorbell: every process of this home rings it after an add."""
        home = self._home
        if self._doorbell is None and home is not None:
            doorbell = Doorbell(home, self._heard)
            if doorbell.start():
                self._doorbell = doorbell

    def _announced(self) -> None:
        home = self._home
        if home is not None:  # every other process's scheduler
            ring(home, skip=self._doorbell.name if self._doorbell else "")

    # -- the SQL of the flow --------------------------------------------------------

    def _writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic()

    def _claiming(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic(immediate=True)

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self.db.conn)

    def _insert(self, conn: sqlite3.Connection, new: Reminder) -> Reminder:
        cursor = conn.execute(
            "INSERT INTO reminders (scope, author, text, due_at, timezone, recurrence, "
            "anchor_at, channel, session_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                *(new.scope, new.author, new.text, _ts(new.due_at), new.timezone),
                *(new.recurrence, _ts(new.anchor_at), new.channel, new.session_id),
                _ts(new.created_at),
            ),
        )
        found = self._find(conn, int(cursor.lastrowid or 0), lock=False)
        assert found is not None
        return found

    def _find(self, conn: sqlite3.Connection, reminder_id: int, *, lock: bool) -> Reminder | None:
        # No row locks: the transaction holds the database's one write lock.
        row = conn.execute(f"SELECT {COLUMNS} FROM reminders WHERE id = ?", (reminder_id,))
        found = row.fetchone()
        return None if found is None else _row(found)

    def _cancel(
        self, conn: sqlite3.Connection, reminder_id: int, by: str, at: datetime
    ) -> Reminder:
        conn.execute(
            "UPDATE reminders SET status = 'cancelled', cancelled_at = ?, cancelled_by = ? "
            "WHERE id = ?",
            (_ts(at), by, reminder_id),
        )
        found = self._find(conn, reminder_id, lock=False)
        assert found is not None
        return found

    def _due(
        self,
        conn: sqlite3.Connection,
        moment: datetime,
        scope: str | None,
        limit: int,
        *,
        claim: bool,
    ) -> list[Reminder]:
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM reminders WHERE status = 'pending' AND due_at <= ? "
            f"{'AND scope = ? ' if scope is not None else ''}ORDER BY due_at LIMIT ?",
            (_ts(moment), *((scope,) if scope is not None else ()), limit),
        ).fetchall()
        return [_row(row) for row in rows]

    def _advance(
        self,
        conn: sqlite3.Connection,
        finished: Sequence[int],
        moved: Sequence[tuple[int, datetime]],
        at: datetime,
    ) -> None:
        conn.executemany(
            "UPDATE reminders SET status = 'delivered', delivered_at = ?, "
            "delivery_count = delivery_count + 1 WHERE id = ?",
            [(_ts(at), reminder_id) for reminder_id in finished],
        )
        conn.executemany(
            "UPDATE reminders SET due_at = ?, delivered_at = ?, "
            "delivery_count = delivery_count + 1 WHERE id = ?",
            [(_ts(due), _ts(at), reminder_id) for reminder_id, due in moved],
        )

    def _soonest(self, conn: sqlite3.Connection, scope: str | None) -> datetime | None:
        """One index seek."""
        if scope is None:
            row = conn.execute("SELECT min(due_at) FROM reminders WHERE status = 'pending'")
        else:
            row = conn.execute(
                "SELECT min(due_at) FROM reminders WHERE scope = ? AND status = 'pending'",
                (scope,),
            )
        (due,) = row.fetchone()
        return None if due is None else _dt(due)

    def _texts(self, conn: sqlite3.Connection) -> Sequence[tuple[int, str]]:
        return [
            (int(row[0]), str(row[1])) for row in conn.execute("SELECT id, text FROM reminders")
        ]

    def _rewrite(self, conn: sqlite3.Connection, changed: Sequence[tuple[int, str]]) -> None:
        conn.executemany(
            "UPDATE reminders SET text = ? WHERE id = ?", [(text, i) for i, text in changed]
        )

    def _of_scope(
        self, conn: sqlite3.Connection, scope: str, include_done: bool, limit: int
    ) -> list[Reminder]:
        statuses = "" if include_done else "AND status = 'pending' "
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM reminders WHERE scope = ? {statuses}"
            "ORDER BY status != 'pending', CASE WHEN status = 'pending' THEN due_at "
            "ELSE -due_at END LIMIT ?",
            (scope, limit),
        ).fetchall()
        return [_row(row) for row in rows]


def _ts(moment: datetime) -> int:
    return int(moment.timestamp())


def _dt(stamp: int) -> datetime:
    return datetime.fromtimestamp(stamp, UTC)


def _row(row: sqlite3.Row) -> Reminder:
    return stored_reminder(row, _dt)
