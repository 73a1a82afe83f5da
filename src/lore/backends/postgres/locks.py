"""Named locks shared by every worker on one database: a conversation's turn, a live
session's writes, Dream, the idle closer, a terminal showing a conversation.

All of one process's locks live on one connection of their own (PostgreSQL session-level
advisory locks), so holding a thousand costs one connection, not a thousand, and every
lock of a worker that dies is dropped by PostgreSQL with its connection. Advisory locks
are re-entrant per connection, so the hub itself keeps two holders in this process apart;
a lock held elsewhere is waited for by asking again with a growing pause; `hold_async`
asks from a worker thread, so the event loop never waits on the database for it.

When the server goes away the locks go with their connection: the hub says so in one
line and connects again once the database is reachable, and the holders that had them
release nothing on the new connection.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import psycopg

from lore.backends.postgres.database import LOCK_NAMESPACE, PostgresDatabase, advisory_key
from lore.config import redact_url
from lore.errors import DatabaseUnavailable

__all__ = ["LockHub"]

log = logging.getLogger(__name__)

_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.1


class LockHub:
    """The advisory locks this process holds on the database at `url`."""

    def __init__(self, url: str, db: PostgresDatabase | None = None) -> None:
        """`db`, the pool on the same database: while it cannot reach the server the hub
        does not try either, and a connection the hub cannot make tells it."""
        self._url = url
        self._db = db
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._mutex = threading.Lock()
        self._held: set[str] = set()
        self._stale: set[str] = set()  # held on a connection that broke: gone on the server

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
        while not await self._try_async(name):
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)
        try:
            yield
        finally:
            await asyncio.to_thread(self._release, name)

    async def _try_async(self, name: str) -> bool:
        """`_try` in a worker thread; a lock it takes for a cancelled caller is let go."""
        attempt = asyncio.ensure_future(asyncio.to_thread(self._try, name))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:

            def let_go(done: asyncio.Future[bool]) -> None:
                if not done.cancelled() and done.exception() is None and done.result():
                    self._release(name)

            attempt.add_done_callback(let_go)
            raise

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
            if name in self._stale:
                self._stale.discard(name)  # it went with the connection that held it
                return
            if self._conn is not None and not self._conn.closed:
                try:
                    self._execute("SELECT pg_advisory_unlock(%s, %s)", name)
                except DatabaseUnavailable:
                    pass  # the connection broke, and the server let go of the lock with it

    def _execute(self, sql: str, name: str) -> tuple[object, ...] | None:
        where = redact_url(self._url)
        if self._conn is None or self._conn.closed:
            if self._db is not None and not self._db.reachable:
                raise self._db.unavailable()
            lost = self._held - self._stale
            if lost:
                # The connection that held them is gone, and the locks with it: another
                # worker may take them now. Their holders release nothing here.
                log.warning("lost %d of Lore's locks with their connection to %s: %s",
                            len(lost), where, ", ".join(sorted(lost)))  # fmt: skip
                self._stale |= lost
            try:
                self._conn = psycopg.connect(self._url, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError as exc:
                if self._db is not None:
                    self._db.went_away()
                raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {where}") from exc
        try:
            return self._conn.execute(sql, (LOCK_NAMESPACE, advisory_key(name))).fetchone()
        except psycopg.OperationalError as exc:
            # Not news for the pool: this connection may have broken in an outage already
            # over. The next call connects again (if the pool can reach the server).
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "closed"
            raise DatabaseUnavailable(
                f"PostgreSQL at {where} lost the connection holding Lore's locks: {first}"
            ) from exc
