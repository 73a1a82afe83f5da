"""The reminders table: the only SQL for reminders, each public write one transaction.

`claim_due` is the heart of exactly-once delivery: inside one BEGIN IMMEDIATE
transaction it finds what is due (by the (status, due_at) index) and marks it, a
one-shot as delivered, a recurring one moved to its next occurrence after now. A second
scheduler on the same database waits for the write lock and then finds nothing left.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lore.backends.local.database import Database
from lore.backends.local.doorbell import Doorbell, ring
from lore.backends.local.outbox import LocalOutbox
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.reminders import (
    LATE_AFTER,
    DueReminder,
    Reminder,
    check_reminder,
    next_occurrence,
    reminder_item,
)

__all__ = ["SQLiteReminderStore"]

_MAX_ID = 2**63 - 1
_COLUMNS = (
    "id, scope, author, text, due_at, timezone, recurrence, anchor_at, status, channel, "
    "session_id, created_at, delivered_at, delivery_count"
)


class SQLiteReminderStore:
    redacted_noun = "reminder"  # forget everywhere's word for one

    def __init__(self, db: Database, outbox: LocalOutbox | None = None) -> None:
        self.db = db
        self._outbox = outbox or LocalOutbox(db)
        self._listeners: list[Callable[[], None]] = []
        self._doorbell: Doorbell | None = None

    @property
    def outbox(self) -> LocalOutbox:
        return self._outbox

    def on_added(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each add, here or in any other process of this home (a
        running scheduler re-checks its wake time at once)."""
        self._listeners.append(listener)
        home = self._home
        if self._doorbell is None and home is not None:
            doorbell = Doorbell(home, self._added)
            if doorbell.start():
                self._doorbell = doorbell

    def _added(self) -> None:
        for listener in list(self._listeners):
            listener()

    def close(self) -> None:
        """Stop listening for reminders added elsewhere."""
        if self._doorbell is not None:
            self._doorbell.close()
            self._doorbell = None

    @property
    def _home(self) -> Path | None:
        path = self.db.path
        return path.parent if isinstance(path, Path) else None

    # -- writes ---------------------------------------------------------------------

    def add(
        self,
        scope: str,
        author: str,
        text: str,
        due: datetime,
        *,
        timezone: str,
        now: datetime,
        recurrence: str | None = None,
        channel: str = "",
        session_id: str = "",
    ) -> Reminder:
        text, canonical = check_reminder(text, due, timezone=timezone, recurrence=recurrence)
        due_ts = _ts(due, up=True)
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "INSERT INTO reminders (scope, author, text, due_at, timezone, recurrence, "
                "anchor_at, channel, session_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    scope,
                    author,
                    text,
                    due_ts,
                    timezone,
                    canonical,
                    due_ts,
                    channel,
                    session_id,
                    _ts(now),
                ),
            )
            reminder = self._get(conn, int(cursor.lastrowid or 0))
        self._added()
        home = self._home
        if home is not None:  # and every other process's scheduler
            ring(home, skip=self._doorbell.name if self._doorbell else "")
        return reminder

    def cancel(self, scope: str, reminder_id: int, *, by: str, now: datetime) -> Reminder:
        """Cancel a pending reminder of this scope; another scope's id is not found."""
        with self.db.atomic() as conn:
            reminder = self._get(conn, reminder_id, scope)
            if reminder.status != "pending":
                raise InvalidInputError(f"reminder #{reminder_id} was already {reminder.status}")
            conn.execute(
                "UPDATE reminders SET status = 'cancelled', cancelled_at = ?, cancelled_by = ? "
                "WHERE id = ?",
                (_ts(now), by, reminder_id),
            )
            return self._get(conn, reminder_id)

    def claim_due(
        self,
        now: datetime,
        limit: int = 100,
        *,
        late_after: timedelta = LATE_AFTER,
        scope: str | None = None,
    ) -> list[DueReminder]:
        """Move up to `limit` due occurrences (of one scope, if given) into the outbox, all
        in one transaction; a one-shot becomes delivered, a recurring one moves on."""
        now_ts = _ts(now)
        claimed: list[DueReminder] = []
        with self.db.atomic(immediate=True) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM reminders WHERE status = 'pending' AND due_at <= ? "
                f"{_SCOPED if scope is not None else ''}ORDER BY due_at LIMIT ?",
                (now_ts, *((scope,) if scope is not None else ()), limit),
            ).fetchall()
            for row in rows:
                reminder = _row(row)
                next_due = next_occurrence(reminder, now)
                if next_due is None:
                    conn.execute(
                        "UPDATE reminders SET status = 'delivered', delivered_at = ?, "
                        "delivery_count = delivery_count + 1 WHERE id = ?",
                        (now_ts, reminder.id),
                    )
                else:
                    conn.execute(
                        "UPDATE reminders SET due_at = ?, delivered_at = ?, "
                        "delivery_count = delivery_count + 1 WHERE id = ?",
                        (_ts(next_due, up=True), now_ts, reminder.id),
                    )
                due = DueReminder(
                    reminder, now.astimezone(UTC), now - reminder.due_at > late_after, next_due
                )
                self._outbox.put_in(conn, reminder_item(due), now=now)
                claimed.append(due)
        return claimed

    # -- reads ----------------------------------------------------------------------

    def get(self, scope: str, reminder_id: int) -> Reminder:
        return self._get(self.db.conn, reminder_id, scope)

    def due(self, now: datetime, limit: int = 100) -> list[Reminder]:
        """What `claim_due` would claim at `now`, without claiming it."""
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM reminders WHERE status = 'pending' AND due_at <= ? "
            "ORDER BY due_at LIMIT ?",
            (_ts(now), limit),
        ).fetchall()
        return [_row(row) for row in rows]

    def next_due_time(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending reminder (of one scope, if given) falls due: one
        index seek."""
        if scope is None:
            row = self.db.conn.execute(
                "SELECT min(due_at) FROM reminders WHERE status = 'pending'"
            ).fetchone()
        else:
            row = self.db.conn.execute(
                "SELECT min(due_at) FROM reminders WHERE scope = ? AND status = 'pending'",
                (scope,),
            ).fetchone()
        return None if row[0] is None else _dt(row[0])

    def _get(
        self, conn: sqlite3.Connection, reminder_id: int, scope: str | None = None
    ) -> Reminder:
        row = None
        if 0 < reminder_id <= _MAX_ID:  # a larger id names no reminder (and cannot bind)
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM reminders WHERE id = ?", (reminder_id,)
            ).fetchone()
        if row is None or (scope is not None and row["scope"] != scope):
            raise NotFoundError(f"no reminder #{reminder_id} in this conversation")
        return _row(row)

    # Last in the class: below it, `list` would name this method, not the builtin.
    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        rows = self.db.conn.execute("SELECT id, text FROM reminders").fetchall()
        changed = [(redact(row[1]), row[0]) for row in rows if match(row[1])]
        if changed and not dry_run:
            with self.db.atomic() as conn:
                conn.executemany("UPDATE reminders SET text = ? WHERE id = ?", changed)
        return len(changed)

    def list(self, scope: str, *, include_done: bool = False, limit: int = 200) -> list[Reminder]:
        """A scope's pending reminders, soonest first; with `include_done`, the rest after."""
        statuses = "" if include_done else "AND status = 'pending' "
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM reminders WHERE scope = ? {statuses}"
            "ORDER BY status != 'pending', CASE WHEN status = 'pending' THEN due_at "
            "ELSE -due_at END LIMIT ?",
            (scope, limit),
        ).fetchall()
        return [_row(row) for row in rows]


_SCOPED = "AND scope = ? "


def _ts(moment: datetime, *, up: bool = False) -> int:
    if moment.tzinfo is None:
        raise ValueError("reminder times must be aware")
    stamp = moment.timestamp()
    return math.ceil(stamp) if up else math.floor(stamp)


def _dt(stamp: int) -> datetime:
    return datetime.fromtimestamp(stamp, UTC)


def _row(row: sqlite3.Row) -> Reminder:
    return Reminder(
        id=row["id"],
        scope=row["scope"],
        author=row["author"],
        text=row["text"],
        due_at=_dt(row["due_at"]),
        timezone=row["timezone"],
        recurrence=row["recurrence"],
        anchor_at=_dt(row["anchor_at"]),
        status=row["status"],
        channel=row["channel"],
        session_id=row["session_id"],
        created_at=_dt(row["created_at"]),
        delivered_at=_dt(row["delivered_at"]) if row["delivered_at"] is not None else None,
        delivery_count=row["delivery_count"],
    )
