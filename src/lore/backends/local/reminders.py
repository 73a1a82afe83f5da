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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lore.backends.local.database import Database
from lore.errors import InvalidInputError, NotFoundError
from lore.schedule import Schedule, next_after, parse_schedule

__all__ = ["DueReminder", "Reminder", "ReminderStore"]

MAX_TEXT = 1000
_MAX_ID = 2**63 - 1
LATE_AFTER = timedelta(seconds=90)  # delivered later than this past due says "(late)"
_COLUMNS = (
    "id, scope, author, text, due_at, timezone, recurrence, anchor_at, status, channel, "
    "session_id, created_at, delivered_at, delivery_count"
)


@dataclass(frozen=True)
class Reminder:
    id: int
    scope: str
    author: str
    text: str
    due_at: datetime  # the next (or last) fire time, UTC
    timezone: str  # IANA name; recurrence is read in this zone
    recurrence: str | None  # canonical schedule text; None for a one-shot
    anchor_at: datetime  # the first fire time; interval schedules count from it
    status: str  # pending | delivered | cancelled
    channel: str
    session_id: str
    created_at: datetime
    delivered_at: datetime | None
    delivery_count: int

    @property
    def zone(self) -> tzinfo:
        return _zone(self.timezone)

    @property
    def local_due(self) -> datetime:
        return self.due_at.astimezone(self.zone)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "author": self.author,
            "text": self.text,
            "due_at": self.due_at.isoformat(),
            "local_due": self.local_due.isoformat(),
            "timezone": self.timezone,
            "recurrence": self.recurrence,
            "status": self.status,
            "channel": self.channel,
            "created_at": self.created_at.isoformat(),
            "delivered_at": self.delivered_at.isoformat() if self.delivered_at else None,
            "delivery_count": self.delivery_count,
        }


@dataclass(frozen=True)
class DueReminder:
    """A claimed occurrence: what to deliver, and what the claim changed."""

    reminder: Reminder  # as it was before the claim; `due_at` is this occurrence
    claimed_at: datetime
    late: bool
    next_due: datetime | None  # where a recurring reminder was moved; None when finished

    @property
    def id(self) -> int:
        return self.reminder.id

    @property
    def scope(self) -> str:
        return self.reminder.scope

    @property
    def author(self) -> str:
        return self.reminder.author

    @property
    def text(self) -> str:
        return self.reminder.text


class ReminderStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._listeners: list[Callable[[], None]] = []

    def on_added(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each add (a running scheduler re-checks its wake time)."""
        self._listeners.append(listener)

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
        text = " ".join(text.split())
        if not text:
            raise InvalidInputError("a reminder needs some text")
        if len(text) > MAX_TEXT:
            raise InvalidInputError(
                f"reminder text is {len(text)} characters; the limit is {MAX_TEXT}"
            )
        zone = _zone(timezone)
        canonical = None
        if recurrence:
            schedule = _schedule(recurrence)
            if next_after(schedule, due, due, zone) is None:
                raise InvalidInputError(f"recurrence {recurrence!r} never fires")
            canonical = schedule.text
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
        for listener in self._listeners:
            listener()
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
        """Claim up to `limit` reminders due at `now` (of one scope, if given), all in one
        transaction."""
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
                next_due = None
                if reminder.recurrence:
                    next_due = next_after(
                        _schedule(reminder.recurrence), reminder.anchor_at, now, reminder.zone
                    )
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
                late = now - reminder.due_at > late_after
                claimed.append(DueReminder(reminder, now.astimezone(UTC), late, next_due))
        return claimed

    def release(self, due: DueReminder) -> bool:
        """Undo a claim whose delivery failed, unless the row changed since (cancelled)."""
        before = due.reminder
        after_status = "pending" if due.next_due else "delivered"
        after_due = _ts(due.next_due, up=True) if due.next_due else _ts(before.due_at)
        with self.db.atomic() as conn:
            cursor = conn.execute(
                "UPDATE reminders SET status = 'pending', due_at = ?, delivered_at = ?, "
                "delivery_count = ? WHERE id = ? AND status = ? AND due_at = ? "
                "AND delivered_at = ?",
                (
                    _ts(before.due_at),
                    _ts(before.delivered_at) if before.delivered_at else None,
                    before.delivery_count,
                    before.id,
                    after_status,
                    after_due,
                    _ts(due.claimed_at),
                ),
            )
            return cursor.rowcount == 1

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


@lru_cache(maxsize=256)
def _schedule(text: str) -> Schedule:
    return parse_schedule(text)


@lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInputError(
            f"unknown timezone {name!r}; use an IANA name like Asia/Taipei"
        ) from exc


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
