"""Reminders in a dict, claimed into a `FakeOutbox`. Times are kept to the whole second
(a due time rounds up), as the port says."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from lore.backends.fake.outbox import FakeOutbox
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.reminders import (
    LATE_AFTER,
    DueReminder,
    Reminder,
    check_reminder,
    next_occurrence,
    reminder_item,
)

__all__ = ["FakeReminderStore"]


class FakeReminderStore:
    redacted_noun = "reminder"  # forget everywhere's word for one

    def __init__(self, outbox: FakeOutbox | None = None) -> None:
        self._outbox = outbox or FakeOutbox()
        self._reminders: dict[int, Reminder] = {}
        self._listeners: list[Callable[[], None]] = []

    @property
    def outbox(self) -> FakeOutbox:
        return self._outbox

    def on_added(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        found = [r for r in self._reminders.values() if match(r.text)]
        if not dry_run:
            for reminder in found:
                self._reminders[reminder.id] = replace(reminder, text=redact(reminder.text))
        return len(found)

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
        reminder = Reminder(
            id=len(self._reminders) + 1,
            scope=scope,
            author=author,
            text=text,
            due_at=due_at,
            timezone=timezone,
            recurrence=canonical,
            anchor_at=due_at,
            status="pending",
            channel=channel,
            session_id=session_id,
            created_at=_second(now),
            delivered_at=None,
            delivery_count=0,
        )
        self._reminders[reminder.id] = reminder
        for listener in self._listeners:
            listener()
        return reminder

    def cancel(self, scope: str, reminder_id: int, *, by: str, now: datetime) -> Reminder:
        reminder = self.get(scope, reminder_id)
        if reminder.status != "pending":
            raise InvalidInputError(f"reminder #{reminder_id} was already {reminder.status}")
        _second(now)
        self._reminders[reminder_id] = replace(reminder, status="cancelled")
        return self._reminders[reminder_id]

    def claim_due(
        self,
        now: datetime,
        limit: int = 100,
        *,
        late_after: timedelta = LATE_AFTER,
        scope: str | None = None,
    ) -> list[DueReminder]:
        claimed: list[DueReminder] = []
        moment = _second(now)
        for reminder in self.due(now, limit=len(self._reminders)):
            if len(claimed) >= limit:
                break
            if scope is not None and reminder.scope != scope:
                continue
            next_due = next_occurrence(reminder, now)
            count = reminder.delivery_count + 1
            if next_due is None:
                moved = replace(reminder, status="delivered", delivery_count=count)
            else:
                moved = replace(reminder, due_at=_second(next_due, up=True), delivery_count=count)
            self._reminders[reminder.id] = replace(moved, delivered_at=moment)
            due = DueReminder(
                reminder, now.astimezone(UTC), now - reminder.due_at > late_after, next_due
            )
            self._outbox.put(reminder_item(due), now=now)
            claimed.append(due)
        return claimed

    def get(self, scope: str, reminder_id: int) -> Reminder:
        reminder = self._reminders.get(reminder_id)
        if reminder is None or reminder.scope != scope:
            raise NotFoundError(f"no reminder #{reminder_id} in this conversation")
        return reminder

    def due(self, now: datetime, limit: int = 100) -> list[Reminder]:
        moment = _second(now)
        pending = [r for r in self._pending() if r.due_at <= moment]
        return pending[:limit]

    def next_due_time(self, scope: str | None = None) -> datetime | None:
        times = [r.due_at for r in self._pending() if scope in (None, r.scope)]
        return min(times, default=None)

    def _pending(self) -> list[Reminder]:
        """Pending reminders, soonest first (by id among equals, as an index would)."""
        found = [r for r in self._reminders.values() if r.status == "pending"]
        return sorted(found, key=lambda r: (r.due_at, r.id))

    # Last in the class: below it, `list` would name this method, not the builtin.
    def list(self, scope: str, *, include_done: bool = False, limit: int = 200) -> list[Reminder]:
        mine = [r for r in self._reminders.values() if r.scope == scope]
        pending = sorted((r for r in mine if r.status == "pending"), key=lambda r: r.due_at)
        done = sorted(
            (r for r in mine if r.status != "pending"), key=lambda r: -r.due_at.timestamp()
        )
        return (pending + (done if include_done else []))[:limit]


def _second(moment: datetime, *, up: bool = False) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("reminder times must be aware")
    stamp = moment.timestamp()
    return datetime.fromtimestamp(math.ceil(stamp) if up else math.floor(stamp), UTC)
