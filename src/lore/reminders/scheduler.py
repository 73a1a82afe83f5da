"""The scheduler: claims due reminders and hands each to a delivery callable.

It sleeps until the next reminder is due, at most `max_sleep` seconds (so reminders added
by another process are seen within a minute), and `wake()` cuts a sleep short when one
is added here. All state is in SQLite, so a restart just claims what fell due meanwhile
(late). Tests drive `run_once(now)` with an explicit time and never sleep.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import datetime

from lore.backends.local.reminders import DueReminder, ReminderStore
from lore.clock import Clock
from lore.errors import LoreError

__all__ = ["Deliver", "Scheduler"]

log = logging.getLogger(__name__)

Deliver = Callable[[DueReminder], Awaitable[None]]


class Scheduler:
    def __init__(
        self,
        store: ReminderStore,
        clock: Clock,
        deliver: Deliver,
        *,
        max_sleep: float = 60.0,
        batch: int = 100,
        scope: str | None = None,
    ) -> None:
        self.store = store
        # None delivers for every conversation (`lore serve`); a chat delivers its own.
        self.scope = scope
        self.clock = clock
        self.deliver = deliver
        self.max_sleep = max_sleep
        self.batch = batch
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._failed = False  # a delivery failed: retry after a full sleep, not in a spin
        store.on_added(self.wake)

    async def run_once(self, now: datetime | None = None) -> list[DueReminder]:
        """Claim everything due at `now` (default: the clock) and deliver it; returns what
        was delivered. A failed delivery is released for a later retry."""
        now = now or self.clock.now()
        delivered: list[DueReminder] = []
        self._failed = False
        while True:
            claimed = self.store.claim_due(now, self.batch, scope=self.scope)
            for position, due in enumerate(claimed):
                try:
                    if await self._deliver_one(due):
                        delivered.append(due)
                except asyncio.CancelledError:
                    # Stopped mid-batch: the rest of the batch is claimed but undelivered.
                    for undelivered in claimed[position + 1 :]:
                        self.store.release(undelivered)
                    raise
            if len(claimed) < self.batch or self._failed:
                return delivered

    async def _deliver_one(self, due: DueReminder) -> bool:
        try:
            await self.deliver(due)
        except asyncio.CancelledError:
            self.store.release(due)  # stopped mid-delivery: leave it for the next run
            raise
        except Exception:
            log.exception("delivering reminder #%d to %s failed; will retry", due.id, due.scope)
            self.store.release(due)
            self._failed = True
            return False
        return True

    def seconds_until_next(self, now: datetime) -> float:
        """How long to sleep: until the next due reminder, never more than `max_sleep`."""
        if self._failed:
            return self.max_sleep
        upcoming = self.store.next_due_time(self.scope)
        if upcoming is None:
            return self.max_sleep
        # A hair past the due second, so waking a moment early does not spin.
        return min(self.max_sleep, max(0.0, (upcoming - now).total_seconds() + 0.01))

    async def run_forever(self) -> None:
        """Deliver reminders until `stop()` or cancellation."""
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        while not self._stopping:
            self._wake.clear()
            try:
                await self.run_once()
            except (LoreError, sqlite3.Error):
                log.exception("the reminder scheduler could not read the database; retrying")
                self._failed = True
            if self._stopping:
                break
            delay = self.seconds_until_next(self.clock.now())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=delay)
            except TimeoutError:
                pass

    def wake(self) -> None:
        """Re-check the next due time now (safe to call from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            same_thread = asyncio.get_running_loop() is loop
        except RuntimeError:
            same_thread = False
        if same_thread:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        self._stopping = True
        self.wake()
