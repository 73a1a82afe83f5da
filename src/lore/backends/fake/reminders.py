"""Reminders in a dict, claimed into a `FakeOutbox`. The rules are the flow's
(`ReminderFlow`), as on every database; only the storage is a dict."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime

from lore.backends.fake.outbox import FakeOutbox, _Table
from lore.backends.reminder_flow import ReminderFlow
from lore.ports.reminders import Reminder

__all__ = ["FakeReminderStore"]


class FakeReminderStore(ReminderFlow[_Table]):
    def __init__(self, outbox: FakeOutbox | None = None) -> None:
        self._deliveries = outbox or FakeOutbox()
        super().__init__(self._deliveries)
        self._reminders: dict[int, Reminder] = {}
        self._lock = threading.RLock()

    @property
    def outbox(self) -> FakeOutbox:
        return self._deliveries

    # The outbox's table is the connection: a claim writes both in one step.
    @contextmanager
    def _writing(self) -> Iterator[_Table]:
        with self._lock, self._deliveries._writing() as table:
            yield table

    def _reading(self) -> AbstractContextManager[_Table]:
        return nullcontext(self._deliveries._table)

    def _insert(self, conn: _Table, new: Reminder) -> Reminder:
        reminder = replace(new, id=len(self._reminders) + 1)
        self._reminders[reminder.id] = reminder
        return reminder

    def _find(self, conn: _Table, reminder_id: int, *, lock: bool) -> Reminder | None:
        return self._reminders.get(reminder_id)

    def _cancel(self, conn: _Table, reminder_id: int, by: str, at: datetime) -> Reminder:
        self._reminders[reminder_id] = replace(self._reminders[reminder_id], status="cancelled")
        return self._reminders[reminder_id]

    def _due(
        self, conn: _Table, moment: datetime, scope: str | None, limit: int, *, claim: bool
    ) -> list[Reminder]:
        pending = [r for r in self._pending() if r.due_at <= moment and scope in (None, r.scope)]
        return pending[:limit]

    def _advance(
        self,
        conn: _Table,
        finished: Sequence[int],
        moved: Sequence[tuple[int, datetime]],
        at: datetime,
    ) -> None:
        for reminder_id in finished:
            reminder = self._reminders[reminder_id]
            self._reminders[reminder_id] = replace(
                reminder,
                status="delivered",
                delivered_at=at,
                delivery_count=reminder.delivery_count + 1,
            )
        for reminder_id, due in moved:
            reminder = self._reminders[reminder_id]
            self._reminders[reminder_id] = replace(
                reminder, due_at=due, delivered_at=at, delivery_count=reminder.delivery_count + 1
            )

    def _soonest(self, conn: _Table, scope: str | None) -> datetime | None:
        return min((r.due_at for r in self._pending() if scope in (None, r.scope)), default=None)

    def _pending(self) -> list[Reminder]:
        """Pending reminders, soonest first (by id among equals, as an index would)."""
        found = [r for r in self._reminders.values() if r.status == "pending"]
        return sorted(found, key=lambda r: (r.due_at, r.id))

    def _texts(self, conn: _Table) -> Sequence[tuple[int, str]]:
        return [(r.id, r.text) for r in self._reminders.values()]

    def _rewrite(self, conn: _Table, changed: Sequence[tuple[int, str]]) -> None:
        for reminder_id, text in changed:
            self._reminders[reminder_id] = replace(self._reminders[reminder_id], text=text)

    def _of_scope(self, conn: _Table, scope: str, include_done: bool, limit: int) -> list[Reminder]:
        mine = [r for r in self._reminders.values() if r.scope == scope]
        pending = sorted((r for r in mine if r.status == "pending"), key=lambda r: r.due_at)
        done = sorted(
            (r for r in mine if r.status != "pending"), key=lambda r: -r.due_at.timestamp()
        )
        return (pending + (done if include_done else []))[:limit]
