"""How a reminder store keeps reminders, the same on every store: what is checked before
a write, times to the whole second (a due time up, `now` down), which ids are not found
and how that is worded, that only a pending reminder can be cancelled, and the claim: in
one transaction, what is due (oldest first) is advanced, a one-shot to delivered and a
recurring one to its next occurrence after now, and each occurrence is put into the
outbox, as `reminder_item` makes it, under its idempotency key.

A store subclasses `ReminderFlow` and gives the SQL as hooks (its transactions, its row
locks, how it tells other processes of an add).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from lore.backends.outbox_flow import OutboxFlow, Row
from lore.backends.stored_time import whole_second
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.reminders import (
    LATE_AFTER,
    DueReminder,
    Reminder,
    check_reminder,
    next_occurrence,
    reminder_item,
)

__all__ = ["COLUMNS", "ReminderFlow", "stored_reminder"]

Conn = TypeVar("Conn")

_MAX_ID = 2**63 - 1
COLUMNS = (
    "id, scope, author, text, due_at, timezone, recurrence, anchor_at, status, channel, "
    "session_id, created_at, delivered_at, delivery_count"
)


class ReminderFlow(ABC, Generic[Conn]):
    """The flow of a reminder store over connections of type `Conn`; claimed occurrences
    go to `outbox`, on the same connections."""

    redacted_noun = "reminder"  # forget everywhere's word for one

    def __init__(self, outbox: OutboxFlow[Conn]) -> None:
        self._outbox = outbox
        self._listeners: list[Callable[[], None]] = []

    @property
    def outbox(self) -> OutboxFlow[Conn]:
        return self._outbox

    def on_added(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each add, here or in any other process on this storage
        (a running scheduler re-checks its wake time at once)."""
        self._listeners.append(listener)
        self._listen()

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
        due_at, created_at = _second(due, up=True), _second(now)
        text, canonical = check_reminder(text, due, timezone=timezone, recurrence=recurrence)
        new = Reminder(
            0, scope, author, text, due_at, timezone, canonical, due_at, "pending",
            channel, session_id, created_at, None, 0,
        )  # fmt: skip
        with self._writing() as conn:
            reminder = self._insert(conn, new)
            self._announce(conn)
        self._heard()
        self._announced()
        return reminder

    def cancel(self, scope: str, reminder_id: int, *, by: str, now: datetime) -> Reminder:
        """Cancel a pending reminder of this scope; another scope's id is not found."""
        at = _second(now)
        with self._writing() as conn:
            reminder = self._get(conn, reminder_id, scope, lock=True)
            if reminder.status != "pending":
                raise InvalidInputError(f"reminder #{reminder_id} was already {reminder.status}")
            return self._cancel(conn, reminder_id, by, at)

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
        moment = _second(now)
        claimed: list[DueReminder] = []
        with self._claiming() as conn:
            finished: list[int] = []
            moved: list[tuple[int, datetime]] = []
            for reminder in self._due(conn, moment, scope, limit, claim=True):
                next_due = next_occurrence(reminder, now)
                if next_due is None:
                    finished.append(reminder.id)
                else:
                    moved.append((reminder.id, _second(next_due, up=True)))
                late = now - reminder.due_at > late_after
                claimed.append(DueReminder(reminder, now.astimezone(UTC), late, next_due))
            self._advance(conn, finished, moved, moment)
            self._outbox.put_all_in(conn, [reminder_item(due) for due in claimed], now=now)
        return claimed

    def get(self, scope: str, reminder_id: int) -> Reminder:
        with self._reading() as conn:
            return self._get(conn, reminder_id, scope)

    def due(self, now: datetime, limit: int = 100) -> list[Reminder]:
        """What `claim_due` would claim at `now`, without claiming it."""
        moment = _second(now)
        with self._reading() as conn:
            return self._due(conn, moment, None, limit, claim=False)

    def next_due_time(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending reminder (of one scope, if given) falls due."""
        with self._reading() as conn:
            return self._soonest(conn, scope)

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every reminder text that `match`es through `redact` (forget everywhere);
        how many (would) change."""
        with self._reading() as conn:
            texts = self._texts(conn)
        changed = [(reminder_id, redact(text)) for reminder_id, text in texts if match(text)]
        if changed and not dry_run:
            with self._writing() as conn:
                self._rewrite(conn, changed)
        return len(changed)

    # -- the flow's own steps ---------------------------------------------------------------

    def _get(self, conn: Conn, reminder_id: int, scope: str, *, lock: bool = False) -> Reminder:
        reminder = None
        if 0 < reminder_id <= _MAX_ID:  # a larger id names no reminder (and cannot bind)
            reminder = self._find(conn, reminder_id, lock=lock)
        if reminder is None or reminder.scope != scope:
            raise NotFoundError(f"no reminder #{reminder_id} in this conversation")
        return reminder

    def _heard(self) -> None:
        """Tell this process's listeners of an add (here, or heard from elsewhere)."""
        for listener in list(self._listeners):
            listener()

    def _listen(self) -> None:
        """Start hearing of adds in other processes, if the store can (once is enough)."""

    def _announce(self, conn: Conn) -> None:
        """Inside the add's transaction: tell other processes once it commits."""

    def _announced(self) -> None:
        """After the add committed: tell other processes."""

    # -- the SQL each store gives -----------------------------------------------------------

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Conn]:
        """One write transaction."""

    def _claiming(self) -> AbstractContextManager[Conn]:
        """The transaction of a claim (by default `_writing`'s)."""
        return self._writing()

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Conn]:
        """A connection to read from."""

    @abstractmethod
    def _insert(self, conn: Conn, new: Reminder) -> Reminder:
        """Store `new` (its id aside) and return it as stored."""

    @abstractmethod
    def _find(self, conn: Conn, reminder_id: int, *, lock: bool) -> Reminder | None:
        """The reminder with this id, locked for this transaction with `lock`."""

    @abstractmethod
    def _cancel(self, conn: Conn, reminder_id: int, by: str, at: datetime) -> Reminder:
        """Mark the reminder cancelled by `by` at `at`; it as stored then."""

    @abstractmethod
    def _due(
        self, conn: Conn, moment: datetime, scope: str | None, limit: int, *, claim: bool
    ) -> list[Reminder]:
        """The oldest `limit` pending reminders due at `moment` (of `scope`, if given);
        with `claim`, locked for this transaction, skipping any another claim holds."""

    @abstractmethod
    def _advance(
        self,
        conn: Conn,
        finished: Sequence[int],
        moved: Sequence[tuple[int, datetime]],
        at: datetime,
    ) -> None:
        """Claimed at `at`: `finished` become delivered, `moved` are due at their new
        time; each counts one delivery more."""

    @abstractmethod
    def _soonest(self, conn: Conn, scope: str | None) -> datetime | None:
        """The earliest due time of a pending reminder (of `scope`, if given)."""

    @abstractmethod
    def _texts(self, conn: Conn) -> Sequence[tuple[int, str]]:
        """(id, text) of every reminder."""

    @abstractmethod
    def _rewrite(self, conn: Conn, changed: Sequence[tuple[int, str]]) -> None:
        """Store these (id, text)."""

    @abstractmethod
    def _of_scope(self, conn: Conn, scope: str, include_done: bool, limit: int) -> list[Reminder]:
        """The scope's pending reminders, soonest first; with `include_done`, then the
        others, latest due first."""

    # Last in the class: below it, `list` would name this method, not the builtin.
    def list(self, scope: str, *, include_done: bool = False, limit: int = 200) -> list[Reminder]:
        """A scope's pending reminders, soonest first; with `include_done`, the rest after,
        latest due first."""
        with self._reading() as conn:
            return self._of_scope(conn, scope, include_done, limit)


def _second(moment: datetime, *, up: bool = False) -> datetime:
    return whole_second(moment, "reminder", up=up)


def stored_reminder(row: Row, time: Callable[[Any], datetime]) -> Reminder:
    """A reminder from a stored row of COLUMNS, its times read through `time`."""
    delivered = row["delivered_at"]
    return Reminder(
        id=int(row["id"]),
        scope=row["scope"],
        author=row["author"],
        text=row["text"],
        due_at=time(row["due_at"]),
        timezone=row["timezone"],
        recurrence=row["recurrence"],
        anchor_at=time(row["anchor_at"]),
        status=row["status"],
        channel=row["channel"],
        session_id=row["session_id"],
        created_at=time(row["created_at"]),
        delivered_at=None if delivered is None else time(delivered),
        delivery_count=int(row["delivery_count"]),
    )
