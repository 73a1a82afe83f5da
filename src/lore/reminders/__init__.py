"""Reminders: point events the scheduler pushes back to the conversation they came from.

`create_reminder` is the one way in (the model's tool, the CLI, later the API): it reads
`when` and the recurrence, refuses what would never fire, and stores the first due time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, tzinfo
from typing import Any

from lore.errors import InvalidInputError, quoted
from lore.ports.reminders import DueReminder, Reminder, ReminderStore
from lore.reminders.when import format_local, parse_when, zone_name
from lore.schedule import Schedule, next_after, parse_schedule

__all__ = [
    "AlreadySet",
    "DueReminder",
    "Reminder",
    "ReminderStore",
    "create_reminder",
    "describe_reminder",
    "first_due",
    "in_words",
    "format_local",
    "parse_when",
]


class AlreadySet(InvalidInputError):
    """The same text at the same time (and recurrence) is already pending in the scope: a
    model that loops, or a user who asks twice, gets the one reminder, not ten."""

    def __init__(self, reminder: Reminder) -> None:
        at = format_local(reminder.due_at, reminder.zone)
        super().__init__(f"reminder #{reminder.id} is already set for {at}; nothing changed")
        self.reminder = reminder


def create_reminder(
    store: ReminderStore,
    *,
    scope: str,
    author: str,
    text: str,
    when: str | None,
    recurrence: str | Mapping[str, Any] | None = None,
    now: datetime,
    zone: tzinfo,
    channel: str = "",
    session_id: str = "",
) -> Reminder:
    """Store a reminder due at `when` (and repeating by `recurrence`), or refuse with a
    one-line reason; nothing is stored on error."""
    first, schedule = first_due(when, recurrence, now=now, zone=zone)
    canonical = schedule.text if schedule else None
    for pending in store.list(scope):
        same_text = " ".join(pending.text.split()).casefold() == " ".join(text.split()).casefold()
        same_time = abs((pending.due_at - first).total_seconds()) < 1  # stored to the second
        if same_text and same_time and pending.recurrence == canonical:
            raise AlreadySet(pending)
    return store.add(
        scope,
        author,
        text,
        first,
        timezone=zone_name(zone),
        now=now,
        recurrence=schedule.text if schedule else None,
        channel=channel,
        session_id=session_id,
    )


def first_due(
    when: str | None,
    recurrence: str | Mapping[str, Any] | None,
    *,
    now: datetime,
    zone: tzinfo,
    what: str = "a reminder",
) -> tuple[datetime, Schedule | None]:
    """When something set for `when` (and repeating by `recurrence`) first falls due, and
    its schedule: the one reading of times that reminders and scheduled tasks share. A
    schedule sent as `when` ("every day at 9") is taken as the recurrence; one that never
    fires is refused."""
    when = (when or "").strip()
    if not when and not recurrence:
        raise InvalidInputError(f"{what} needs a time ('when') or a recurrence")
    first: datetime | None = None
    if when:
        try:
            first = parse_when(when, now, zone)
        except InvalidInputError:
            if recurrence or not _is_schedule(when):
                raise
            recurrence = when  # "every day at 9" sent as `when`: it is a recurrence
    schedule: Schedule | None = None
    if recurrence:
        local_first = first.astimezone(zone) if first else None
        schedule = parse_schedule(recurrence, default=local_first)
        if first is None:
            first = next_after(schedule, now, now, zone)
            if first is None:
                raise InvalidInputError(f"recurrence {quoted(schedule.text)} never fires")
    assert first is not None
    return first, schedule


def describe_reminder(reminder: Reminder, now: datetime | None = None) -> str:
    """One line: #7 Mon 2026-12-01 09:00 (Asia/Taipei), in 16 h — pills [repeats daily 09:00]."""
    line = f"#{reminder.id} {format_local(reminder.due_at, reminder.zone)}"
    if now is not None and reminder.status == "pending":
        line += f", {in_words(reminder.due_at - now)}"
    line += f" — {reminder.text}"
    if reminder.recurrence:
        line += f" [repeats {reminder.recurrence}]"
    if reminder.status != "pending":
        line += f" ({reminder.status})"
    return line


def in_words(delta: timedelta) -> str:
    """A delay in words, rounded to the minute: in 10 min, in 16 h 5 min, in 3 days."""
    minutes = max(0, round(delta.total_seconds() / 60))
    if minutes == 0:
        return "in less than a minute"
    if minutes < 60:
        return f"in {minutes} min"
    if minutes < 48 * 60:
        hours, rest = divmod(minutes, 60)
        return f"in {hours} h {rest} min" if rest else f"in {hours} h"
    return f"in {round(minutes / 1440)} days"


def _is_schedule(text: str) -> bool:
    try:
        parse_schedule(text)
    except InvalidInputError:
        return False
    return True
