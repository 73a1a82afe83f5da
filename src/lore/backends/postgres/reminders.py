"""Reminders on PostgreSQL: the only SQL for reminders, each public write one transaction.

`claim_due` is where many workers meet: it selects due rows `FOR UPDATE SKIP LOCKED`,
so concurrent claims take disjoint rows without waiting for each other, and a row
another worker has just claimed no longer matches (`status`, `due_at` changed). In the
same transaction each occurrence is advanced (a one-shot becomes delivered, a recurring
one moves to its next time) and put into the outbox under its idempotency key, so it
is neither lost nor delivered twice, whichever worker dies when. Times are kept to the
whole second as the SQLite store keeps them (due rounded up, now rounded down).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from psycopg.rows import DictRow

from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.backends.postgres.notify import Listener, notify
from lore.backends.postgres.outbox import PostgresOutbox
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.reminders import (
    LATE_AFTER,
    DueReminder,
    Reminder,
    check_reminder,
    next_occurrence,
    reminder_item,
)

__all__ = ["PostgresReminderStore"]

_MAX_ID = 2**63 - 1
_COLUMNS = (
    "id, scope, author, text, due_at, timezone, recurrence, anchor_at, status, channel, "
    "session_id, created_at, delivered_at, delivery_count"
)


class PostgresReminderStore:
    redacted_noun = "reminder"  # forget everywhere's word for one

    def __init__(self, db: PostgresDatabase, outbox: PostgresOutbox | None = None) -> None:
        self.db = db
        self._outbox = outbox or PostgresOutbox(db)
        self._listeners: list[Callable[[], None]] = []
        self._listening: Listener | None = None

    @property
    def outbox(self) -> PostgresOutbox:
        return self._outbox

    def on_added(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each add by any worker on this database (LISTEN/NOTIFY):
        a running scheduler re-checks its wake time at once."""
        self._listeners.append(listener)
        if self._listening is None:
            self._listening = Listener(self.db.url, self._added)
            self._listening.start()

    def _added(self) -> None:
        for listener in list(self._listeners):
            listener()

    def close(self) -> None:
        """Stop listening for reminders added elsewhere."""
        if self._listening is not None:
            self._listening.close()
            self._listening = None

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
        due_at = _second(due, up=True)
        with self.db.atomic() as conn:
            row = conn.execute(
                "INSERT INTO reminders (scope, author, text, due_at, timezone, recurrence,"
                " anchor_at, channel, session_id, created_at)"
                f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
                (scope, author, text, due_at, timezone, canonical, due_at, channel, session_id,
                 _second(now)),
            ).fetchone()  # fmt: skip
            notify(conn)  # every worker's scheduler, when this commits
        assert row is not None
        self._added()
        return _row(row)

    def cancel(self, scope: str, reminder_id: int, *, by: str, now: datetime) -> Reminder:
        """Cancel a pending reminder of this scope; another scope's id is not found."""
        with self.db.atomic() as conn:
            reminder = self._get(conn, reminder_id, scope, lock=True)
            if reminder.status != "pending":
                raise InvalidInputError(f"reminder #{reminder_id} was already {reminder.status}")
            row = conn.execute(
                "UPDATE reminders SET status = 'cancelled', cancelled_at = %s, cancelled_by = %s"
                f" WHERE id = %s RETURNING {_COLUMNS}",
                (_second(now), by, reminder_id),
            ).fetchone()
        assert row is not None
        return _row(row)

    def claim_due(
        self,
        now: datetime,
        limit: int = 100,
        *,
        late_after: timedelta = LATE_AFTER,
        scope: str | None = None,
    ) -> list[DueReminder]:
        """Move up to `limit` due occurrences (of one scope, if given) into the outbox, in
        one transaction: a one-shot becomes delivered, a recurring one moves on. Rows
        another worker is claiming at the same moment are skipped, not waited for."""
        moment = _second(now)
        claimed: list[DueReminder] = []
        with self.db.atomic() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM reminders WHERE status = 'pending' AND due_at <= %s"
                f"{_SCOPED if scope is not None else ''} ORDER BY due_at LIMIT %s"
                " FOR UPDATE SKIP LOCKED",
                (moment, *((scope,) if scope is not None else ()), limit),
            ).fetchall()
            finished: list[tuple[datetime, int]] = []
            moved: list[tuple[datetime, datetime, int]] = []
            for row in rows:
                reminder = _row(row)
                next_due = next_occurrence(reminder, now)
                if next_due is None:
                    finished.append((moment, reminder.id))
                else:
                    moved.append((_second(next_due, up=True), moment, reminder.id))
                late = now - reminder.due_at > late_after
                claimed.append(DueReminder(reminder, now.astimezone(UTC), late, next_due))
            # One round trip each, however many were claimed (the rows are locked already).
            with conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE reminders SET status = 'delivered', delivered_at = %s,"
                    " delivery_count = delivery_count + 1 WHERE id = %s",
                    finished,
                )
                cursor.executemany(
                    "UPDATE reminders SET due_at = %s, delivered_at = %s,"
                    " delivery_count = delivery_count + 1 WHERE id = %s",
                    moved,
                )
            self._outbox.put_all_in(conn, [reminder_item(due) for due in claimed], now=now)
        return claimed

    # -- reads ----------------------------------------------------------------------

    def get(self, scope: str, reminder_id: int) -> Reminder:
        with self.db.connection() as conn:
            return self._get(conn, reminder_id, scope)

    def due(self, now: datetime, limit: int = 100) -> list[Reminder]:
        """What `claim_due` would claim at `now`, without claiming it."""
        rows = self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM reminders WHERE status = 'pending' AND due_at <= %s"
            " ORDER BY due_at LIMIT %s",
            (_second(now), limit),
        )
        return [_row(row) for row in rows]

    def next_due_time(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending reminder (of one scope, if given) falls due: one
        index seek."""
        sql = "SELECT min(due_at) AS at FROM reminders WHERE status = 'pending'"
        row = (
            self.db.fetch_one(sql) if scope is None else self.db.fetch_one(sql + _SCOPED, (scope,))
        )
        return None if row is None else row["at"]

    def _get(
        self, conn: Connection, reminder_id: int, scope: str | None = None, *, lock: bool = False
    ) -> Reminder:
        row = None
        if 0 < reminder_id <= _MAX_ID:  # a larger id names no reminder (and cannot bind)
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM reminders WHERE id = %s{' FOR UPDATE' if lock else ''}",
                (reminder_id,),
            ).fetchone()
        if row is None or (scope is not None and row["scope"] != scope):
            raise NotFoundError(f"no reminder #{reminder_id} in this conversation")
        return _row(row)

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every reminder text that `match`es through `redact` (forget everywhere);
        how many (would) change."""
        rows = self.db.fetch_all("SELECT id, text FROM reminders")
        changed = [(redact(row["text"]), row["id"]) for row in rows if match(row["text"])]
        if changed and not dry_run:
            with self.db.atomic() as conn, conn.cursor() as cursor:
                cursor.executemany("UPDATE reminders SET text = %s WHERE id = %s", changed)
        return len(changed)

    # Last in the class: below it, `list` would name this method, not the builtin.
    def list(self, scope: str, *, include_done: bool = False, limit: int = 200) -> list[Reminder]:
        """A scope's pending reminders, soonest first; with `include_done`, the rest after,
        latest first."""
        statuses = "" if include_done else "AND status = 'pending' "
        rows = self.db.fetch_all(
            f"SELECT {_COLUMNS} FROM reminders WHERE scope = %s {statuses}"
            "ORDER BY status != 'pending', CASE WHEN status = 'pending' THEN due_at END,"
            " due_at DESC LIMIT %s",
            (scope, limit),
        )
        return [_row(row) for row in rows]


_SCOPED = " AND scope = %s"  # by a literal, so the (scope, status, due_at) index serves it


def _second(moment: datetime, *, up: bool = False) -> datetime:
    """The moment to the whole second (up for due times, down for now), as SQLite keeps it."""
    if moment.tzinfo is None:
        raise ValueError("reminder times must be aware")
    stamp = moment.timestamp()
    return datetime.fromtimestamp(math.ceil(stamp) if up else math.floor(stamp), UTC)


def _row(row: DictRow) -> Reminder:
    return Reminder(
        id=row["id"],
        scope=row["scope"],
        author=row["author"],
        text=row["text"],
        due_at=row["due_at"],
        timezone=row["timezone"],
        recurrence=row["recurrence"],
        anchor_at=row["anchor_at"],
        status=row["status"],
        channel=row["channel"],
        session_id=row["session_id"],
        created_at=row["created_at"],
        delivered_at=row["delivered_at"],
        delivery_count=row["delivery_count"],
    )
