"""The reminders port: what a reminder is, and what every reminder store must do.

A reminder is a point event: due at one moment (or on a schedule), pushed back to the
conversation it came from. Claiming a due occurrence moves it into the outbox in the
same transaction, so a crash can never lose it between "due" and "delivered".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lore.errors import InvalidInputError
from lore.ports.outbox import OutboxItem, ReminderPayload
from lore.schedule import Schedule, next_after, parse_schedule

if TYPE_CHECKING:
    from lore.ports.outbox import Outbox

__all__ = [
    "ReminderStatus",
    "LATE_AFTER",
    "MAX_TEXT",
    "DueReminder",
    "Reminder",
    "ReminderStore",
    "check_reminder",
    "next_occurrence",
    "occurrence_key",
    "schedule_named",
    "reminder_item",
    "zone_named",
]

MAX_TEXT = 1000
LATE_AFTER = timedelta(seconds=90)  # delivered later than this past due says "(late)"


# A reminder waits for its time, was delivered (a one-shot), or was cancelled.
ReminderStatus = Literal["pending", "delivered", "cancelled"]


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
    status: ReminderStatus
    channel: str
    session_id: str
    created_at: datetime
    delivered_at: datetime | None
    delivery_count: int

    @property
    def zone(self) -> tzinfo:
        return zone_named(self.timezone)

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


class ReminderStore(Protocol):
    """Reminders per scope. Each public write is one transaction.

    Times are kept to the whole second (a due time rounds up, `now` rounds down); a naive
    time is a ValueError. Another scope's id, or an unknown one, is a NotFoundError naming
    "#id". The suite in tests/contract/test_reminders_contract.py holds every backend to
    this.
    """

    @property
    def outbox(self) -> Outbox:
        """Where claimed occurrences go to be delivered."""

    def on_added(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each add (a running scheduler re-checks its wake time)."""

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every reminder text that `match`es through `redact` (forget everywhere);
        how many (would) change."""

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
        """A pending reminder; its text is kept on one line. Empty or overlong text, an
        unknown zone, or a recurrence that never fires is an InvalidInputError (nothing
        stored); a recurrence is stored in canonical form. Listeners hear of it after."""

    def cancel(self, scope: str, reminder_id: int, *, by: str, now: datetime) -> Reminder:
        """Mark a pending reminder cancelled (what a claim already put in the outbox stays
        there); one no longer pending is an InvalidInputError "already <status>"."""

    def claim_due(
        self,
        now: datetime,
        limit: int = 100,
        *,
        late_after: timedelta = LATE_AFTER,
        scope: str | None = None,
    ) -> list[DueReminder]:
        """Move up to `limit` due occurrences (of one scope, if given) into the outbox, in
        one transaction: a one-shot becomes delivered, a recurring one moves to its next
        occurrence after `now` (missed ones fire once, late). Each occurrence enters the
        outbox once, as `reminder_item` makes it, under its idempotency key. Oldest due
        first; each DueReminder holds the reminder as it was before the claim, and is late
        when claimed more than `late_after` past due."""

    def get(self, scope: str, reminder_id: int) -> Reminder: ...

    def due(self, now: datetime, limit: int = 100) -> list[Reminder]:
        """What `claim_due` would claim at `now` (any scope), without claiming it."""

    def next_due_time(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending reminder (of one scope, if given) falls due."""

    def list(self, scope: str, *, include_done: bool = False, limit: int = 200) -> list[Reminder]:
        """A scope's pending reminders, soonest first; with `include_done`, the delivered
        and cancelled ones after them, latest due first."""


def check_reminder(
    text: str, due: datetime, *, timezone: str, recurrence: str | None
) -> tuple[str, str | None]:
    """What every reminder store checks before it writes: the text on one line, within
    MAX_TEXT; a known zone; a recurrence that fires. Returns the text and the recurrence
    in canonical form; nothing is written on error."""
    text = " ".join(text.split())
    if not text:
        raise InvalidInputError("a reminder needs some text")
    if len(text) > MAX_TEXT:
        raise InvalidInputError(f"reminder text is {len(text)} characters; the limit is {MAX_TEXT}")
    zone = zone_named(timezone)
    if not recurrence:
        return text, None
    schedule = schedule_named(recurrence)
    if next_after(schedule, due, due, zone) is None:
        raise InvalidInputError(f"recurrence {recurrence!r} never fires")
    return text, schedule.text


def next_occurrence(reminder: Reminder, now: datetime) -> datetime | None:
    """Where a claimed reminder moves: its next fire time after `now`, None when done."""
    if not reminder.recurrence:
        return None
    return next_after(schedule_named(reminder.recurrence), reminder.anchor_at, now, reminder.zone)


@lru_cache(maxsize=256)
def schedule_named(text: str) -> Schedule:
    return parse_schedule(text)


def occurrence_key(reminder_id: int, due_at: datetime) -> str:
    """The idempotency key of one occurrence: the same occurrence is delivered once."""
    return f"reminder:{reminder_id}:{int(due_at.timestamp())}"


def reminder_item(due: DueReminder) -> OutboxItem:
    """A claimed occurrence as the outbox item every backend queues for it: its payload
    is what a delivery reads."""
    reminder = due.reminder
    return OutboxItem(
        id=0,
        key=occurrence_key(reminder.id, reminder.due_at),
        scope=reminder.scope,
        channel=reminder.channel,
        kind="reminder",
        payload=ReminderPayload(
            reminder_id=reminder.id,
            text=reminder.text,
            author=reminder.author,
            due_at=reminder.due_at,
            timezone=reminder.timezone,
            late=due.late,
            recurrence=reminder.recurrence,
            next_due=due.next_due,
        ),
        status="pending",
        attempts=0,
        created_at=due.claimed_at,
    )


@lru_cache(maxsize=64)
def zone_named(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInputError(
            f"unknown timezone {name!r}; use an IANA name like Asia/Taipei"
        ) from exc
