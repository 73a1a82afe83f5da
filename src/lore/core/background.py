"""Work that runs after a reply without delaying it: extraction, consolidation, summaries.

Jobs run as asyncio tasks; a failure is logged and reported as a notice, never raised
into the chat. Jobs sharing a key (e.g. one session's consolidation) run one at a time.
A job that failed because the database could not be reached (`DatabaseUnavailable`)
waits and runs again, with a growing pause, until the database is back: at most
`MAX_WAITING` jobs wait at once, each for at most `GIVE_UP_AFTER` seconds, each logged in
one line when it starts waiting. A one-shot run calls `drain()` before it exits so no
work is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lore.errors import DatabaseUnavailable

__all__ = ["GIVE_UP_AFTER", "MAX_WAITING", "Background"]

log = logging.getLogger(__name__)

MAX_WAITING = 256  # jobs waiting for the database at once; more fail as any failure does
GIVE_UP_AFTER = 900.0  # seconds a job waits for the database before it fails
_FIRST_PAUSE = 0.5
_LONGEST_PAUSE = 5.0  # a job runs again at most this long after the database is back


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self.waiting = 0  # jobs waiting for the database to come back
        # The process ends once this work is done (`lore chat -m`): work that only makes
        # a later process faster (embedding the turn's messages) is left to that one.
        self.one_shot = False

    def spawn(
        self,
        job: Callable[[], Awaitable[Any]],
        *,
        name: str,
        key: str | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> asyncio.Task[Any]:
        async def once() -> None:
            lock = self._locks.setdefault(key, asyncio.Lock()) if key else None
            if lock is None:
                await job()
            else:
                async with lock:
                    await job()

        async def run() -> None:
            try:
                try:
                    await once()
                except DatabaseUnavailable as exc:
                    await self._when_back(once, name, exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a background failure never reaches the chat
                log.warning("background job %s failed: %s", name, exc, exc_info=True)
                if on_error is not None:
                    on_error(exc)

        task = asyncio.create_task(run(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _when_back(
        self, once: Callable[[], Awaitable[None]], name: str, exc: DatabaseUnavailable
    ) -> None:
        """Run the job again until the database lets it through; raise the last error
        when too many wait already or it waited too long."""
        if self.waiting >= MAX_WAITING:
            raise exc
        log.warning("background job %s waits for the database: %s", name, exc)
        self.waiting += 1
        try:
            began = time.monotonic()
            pause = _FIRST_PAUSE
            while True:
                await asyncio.sleep(pause)
                try:
                    await once()
                except DatabaseUnavailable as again:
                    if time.monotonic() - began > GIVE_UP_AFTER:
                        raise again from None
                    pause = min(pause * 2, _LONGEST_PAUSE)
                    continue
                log.info("background job %s done once the database was back", name)
                return
        finally:
            self.waiting -= 1

    def has(self, name: str) -> bool:
        """Is a job of this name waiting or running?"""
        return any(task.get_name() == name for task in self._tasks)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for every job, including jobs spawned by jobs."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
