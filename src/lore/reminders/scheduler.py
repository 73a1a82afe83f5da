"""The scheduler: moves due reminders into the outbox, then delivers what the outbox holds.

Claiming and delivering are two steps on purpose. A claim moves an occurrence into the
outbox in the same transaction that advances the reminder, so it is never lost; a
delivery leases the item, delivers it with its idempotency key and marks it done, so a
process killed in between loses nothing (the lease runs out, another delivers it) and
no conversation sees it twice. It sleeps until the next thing is due, at most
`max_sleep` seconds (reminders added by another process are seen within a minute), and
`wake()` cuts a sleep short when one is added here. Tests drive `run_once(now)`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Callable
from datetime import datetime

from lore.clock import Clock
from lore.errors import DamagedRecordError, DatabaseUnavailable, LoreError
from lore.lease_holder import LeaseHolder
from lore.ports.outbox import Outbox, OutboxItem
from lore.ports.reminders import ReminderStore
from lore.reminders.delivery import Deliver, Delivery
from lore.text import counted

__all__ = ["Deliver", "Scheduler"]

log = logging.getLogger(__name__)

_RETRY_SECONDS = 30.0  # a failed delivery is tried again after this, then less often


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
        accepts: Callable[[str], bool] | None = None,
        owner: str | None = None,
        lease_seconds: float = 60.0,
        holder: LeaseHolder | None = None,
    ) -> None:
        self.store = store
        self.outbox: Outbox = store.outbox
        # A scope: a chat delivering its own conversation. None: every scope `accepts`
        # takes (`lore serve`, which leaves the ones a terminal shows to that terminal).
        self.scope = scope
        self.accepts = accepts
        # With a holder, what a process that ended left leased is taken over at once.
        self.holder = holder
        self.owner = owner or (holder.name if holder else f"{os.getpid()}:{id(self):x}")
        self.clock = clock
        self.deliver = deliver
        self.max_sleep = max_sleep
        self.batch = batch
        self.lease_seconds = lease_seconds
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._failed = False  # a delivery failed: retry after a full sleep, not in a spin
        store.on_added(self.wake)

    async def run_once(self, now: datetime | None = None) -> list[Delivery]:
        """Claim everything due at `now` (default: the clock) into the outbox, then
        deliver what is ready; returns what was delivered."""
        now = now or self.clock.now()
        self._failed = False
        while len(self.store.claim_due(now, self.batch, scope=self.scope)) == self.batch:
            pass
        delivered: list[Delivery] = []
        if self.holder is not None and (gone := self.holder.gone()):
            if ended := self.outbox.end_leases(gone):
                log.info("taking over %s a stopped process left", counted(ended, "reminder"))
        while True:
            items = self.outbox.lease(
                owner=self.owner,
                now=now,
                scopes=self._scopes(now),
                limit=self.batch,
                seconds=self.lease_seconds,
            )
            for position, item in enumerate(items):
                try:
                    try:
                        due = Delivery(item, now)
                    except DamagedRecordError as exc:
                        self._failed_with(item, now, exc)
                        continue
                    if await self._deliver_one(due, now):
                        delivered.append(due)
                except asyncio.CancelledError:
                    # Stopped mid-batch: what was not delivered goes back at once.
                    for rest in items[position + 1 :]:
                        self.outbox.release(rest.id, owner=self.owner)
                    raise
            if len(items) < self.batch or self._failed:
                return delivered

    def _scopes(self, now: datetime) -> list[str] | None:
        if self.scope is not None:
            if self.accepts is not None and not self.accepts(self.scope):
                return []  # its reminders go elsewhere now: another process delivers them
            return [self.scope]
        if self.accepts is None:
            return None
        return [scope for scope in self.outbox.ready_scopes(now) if self.accepts(scope)]

    async def _deliver_one(self, due: Delivery, now: datetime) -> bool:
        try:
            await self.deliver(due)
        except asyncio.CancelledError:
            self.outbox.release(due.item.id, owner=self.owner)  # stopped: the next run has it
            raise
        except Exception as exc:
            log.exception("delivering reminder #%d to %s failed; will retry", due.id, due.scope)
            self._failed_with(due.item, now, exc)
            return False
        self.outbox.done(due.item.id, owner=self.owner, now=now)
        return True

    def _failed_with(self, item: OutboxItem, now: datetime, error: Exception) -> None:
        """Give the item back to be tried again later, and in the end marked failed."""
        if isinstance(error, DamagedRecordError):  # kept: another version may read it
            log.error("%s, for %s: kept, and tried again later", error, item.scope)
        delay = min(_RETRY_SECONDS * 2**item.attempts, 3600.0)
        self.outbox.retry(item.id, owner=self.owner, now=now, error=str(error), delay=delay)
        self._failed = True

    def seconds_until_next(self, now: datetime) -> float:
        """How long to sleep: until the next due reminder or ready delivery, never more
        than `max_sleep`."""
        if self._failed:
            return self.max_sleep
        times = [self.store.next_due_time(self.scope), self.outbox.next_ready(self.scope)]
        upcoming = min((t for t in times if t is not None), default=None)
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
            except DatabaseUnavailable as exc:  # passing: one line, not a traceback a poll
                log.warning("the reminder scheduler waits for the database: %s", exc)
                self._failed = True
            except (LoreError, sqlite3.Error):
                log.exception("the reminder scheduler could not read the database; retrying")
                self._failed = True
            if self._stopping:
                break
            try:
                delay = self.seconds_until_next(self.clock.now())
            except DatabaseUnavailable as exc:
                log.warning("the reminder scheduler waits for the database: %s", exc)
                delay = self.max_sleep
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
