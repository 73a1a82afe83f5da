"""Named locks shared by every worker on one database: a conversation's turn, a live
session's writes, Dream, the idle closer, a terminal showing a conversation.

All of one process's locks live on one connection of their own (PostgreSQL session-level
advisory locks), so holding a thousand costs one connection, not a thousand, and every
lock of a worker that dies is dropped by PostgreSQL with its connection. Advisory locks
are re-entrant per connection, so the hub itself keeps two holders in this process apart;
a lock held elsewhere is waited for by asking again with a growing pause.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import psycopg

from lore.backends.postgres.database import LOCK_NAMESPACE, advisory_key
from lore.config import redact_url
from lore.errors import StoreError

__all__ = ["LockHub"]

_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.1


class LockHub:
    """The advisory locks this process holds on the database at `url`."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._mutex = threading.Lock()
        self._held: set[str] = set()

    @contextmanager
    def hold(self, name: str, *, wait: bool = True) -> Iterator[bool]:
        """Hold `name` for the block; with `wait=False` yield False at once when someone
        (another worker, or another holder here) has it."""
        pause = _FIRST_PAUSE
        while not self._try(name):
            if not wait:
                yield False
                return
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)
        try:
            yield True
        finally:
            self._release(name)

    @asynccontextmanager
    async def hold_async(self, name: str) -> AsyncIterator[None]:
        """`hold` for the event loop: waits without blocking other conversations."""
        pause = _FIRST_PAUSE
        while not self._try(name):
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)
        try:
            yield
        finally:
            self._release(name)

    def held_anywhere(self, name: str) -> bool:
        """Does any worker (this one included) hold `name` right now?"""
        if not self._try(name):
            return True
        self._release(name)
        return False

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._held.clear()

    def _try(self, name: str) -> bool:
        with self._mutex:
            if name in self._held:
                return False
            row = self._execute("SELECT pg_try_advisory_lock(%s, %s)", name)
            if row is None or not row[0]:
                return False
            self._held.add(name)
            return True

    def _release(self, name: str) -> None:
        with self._mutex:
            self._held.discard(name)
            if self._conn is not None and not self._conn.closed:
                self._execute("SELECT pg_advisory_unlock(%s, %s)", name)

    def _execute(self, sql: str, name: str) -> tuple[object, ...] | None:
        if self._conn is None or self._conn.closed:
            if self._held:
                # The connection that held them is gone, and the locks with it.
                raise StoreError("lost the connection holding Lore's locks; restart the worker")
            try:
                self._conn = psycopg.connect(self._url, autocommit=True)
            except psycopg.OperationalError as exc:
                raise StoreError(
                    f"cannot connect to PostgreSQL at {redact_url(self._url)}"
                ) from exc
        try:
            return self._conn.execute(sql, (LOCK_NAMESPACE, advisory_key(name))).fetchone()
        except psycopg.OperationalError as exc:
            raise StoreError(f"lost the connection holding Lore's locks: {exc}") from exc
