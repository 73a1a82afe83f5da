"""A pool of connections to one PostgreSQL database: migrations on open, nestable `atomic()`.

Stores own their tables' SQL and use this class for connections and transactions;
nothing else runs SQL. Connections are shared by every thread through a psycopg pool:
a thread inside `atomic()` keeps its connection, so nested calls become savepoints and
reads inside a transaction see its writes.

A server that stops answering (stopped, restarting, the network gone) is noticed by the
first call that loses its connection; from then on a thread of its own tries to connect
twice a second, and until it can every call is a `DatabaseUnavailable`: at once on an
event loop's thread (so `/health` and every other conversation go on), after waiting up
to the pool's timeout on any other thread.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import pkgutil
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from lore.config import redact_url
from lore.errors import DatabaseUnavailable, StoreError

__all__ = [
    "LOCK_NAMESPACE",
    "Connection",
    "PostgresDatabase",
    "advisory_key",
    "check_url",
    "migrations",
]

log = logging.getLogger(__name__)

Connection = psycopg.Connection[DictRow]

_PROBE_EVERY = 0.5  # seconds between two tries to reach a server that went away

# pg_advisory locks take (namespace, key): Lore's namespace keeps clear of other users.
_LOCK_NAMESPACE = 0x4C6F7265  # "Lore"
LOCK_NAMESPACE = _LOCK_NAMESPACE  # for the lock hub, which keeps its own connection
_MIGRATION_KEY = 0


def migrations() -> list[tuple[int, str, ModuleType]]:
    """Every migration module in `lore.backends.postgres.migrations`, ordered by number."""
    import lore.backends.postgres.migrations as package

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        name = info.name
        if not (name.startswith("m") and name[1:4].isdigit() and name[4:5] == "_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{name}")
        found.append((int(name[1:4]), name, module))
    found.sort()
    numbers = [n for n, _, _ in found]
    if len(numbers) != len(set(numbers)):
        raise StoreError(f"two migrations share a number: {numbers}")
    return found


def check_url(url: str) -> None:
    """Refuse an address libpq cannot parse at once: the pool would retry it until its
    timeout and then only say it cannot connect. The message masks a password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        raise StoreError(
            f"{redact_url(url)!r} is not a PostgreSQL URL; use postgresql://USER@HOST/DATABASE"
        ) from None


def advisory_key(text: str) -> int:
    """A stable 32-bit key for an advisory lock named by `text` (a scope, a job)."""
    value = 2166136261
    for byte in text.encode("utf-8"):  # FNV-1a: stable across processes, unlike hash()
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


class PostgresDatabase:
    """The connection pool for one database. Use `atomic()` for every write."""

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 15.0
    ) -> None:
        check_url(url)
        self.url = url
        self._local = threading.local()
        self._timeout = timeout
        self._reachable = threading.Event()  # cleared while the server cannot be reached
        self._reachable.set()
        self.unreachable_since: float | None = None  # epoch seconds, while unreachable
        self.unreachable_reason = ""
        self._probing = threading.Lock()  # held by the thread trying to reach it
        self._closed = threading.Event()
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            connection_class=psycopg.Connection[DictRow],
            configure=_configure,
            open=False,
            name="lore",
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to PostgreSQL at {redact_url(url)}") from exc
        try:
            self._migrate()
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(f"{redact_url(url)} is not a usable Lore database: {exc}") from exc

    @property
    def schema_version(self) -> int:
        with self.connection() as conn:
            row = conn.execute("SELECT coalesce(max(number), 0) AS n FROM lore_migrations")
            found = row.fetchone()
        return 0 if found is None else int(found["n"])

    @contextmanager
    def atomic(self) -> Iterator[Connection]:
        """A transaction; nested calls become savepoints. Rolls back on any exception."""
        current: Connection | None = getattr(self._local, "conn", None)
        if current is not None:
            with current.transaction():
                yield current
            return
        with self._pooled() as conn:
            self._local.conn = conn
            try:
                with self._lost(conn), conn.transaction():
                    yield conn
            finally:
                self._local.conn = None

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection for reads: the thread's open transaction, or one from the pool
        (autocommit: each statement sees the latest committed data)."""
        current: Connection | None = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self._pooled() as conn, self._lost(conn):
            yield conn

    @contextmanager
    def _lost(self, conn: Connection) -> Iterator[None]:
        """A connection that broke under a call (the server restarted, a failover, an idle
        connection cut) as a StoreError, which the scheduler and the CLI handle; the pool
        drops it, so the next call gets a fresh one."""
        try:
            yield
        except psycopg.Error as exc:
            if not (conn.broken or conn.closed):
                raise
            self.went_away(f"lost its connection: {_first_line(exc)}")
            where = redact_url(self.url)
            raise DatabaseUnavailable(
                f"PostgreSQL at {where} lost its connection: {_first_line(exc)}"
            ) from exc
        if not self._reachable.is_set():
            self.unreachable_since = None
            self.unreachable_reason = ""
            self._reachable.set()  # the server answered: no need to wait for the probe

    @contextmanager
    def _pooled(self) -> Iterator[Connection]:
        """A connection from the pool, unless the server is known to be unreachable: then
        a DatabaseUnavailable, at once on an event loop, else once the pool's timeout has
        passed without the server coming back."""
        if not self._reachable.is_set():
            if _on_event_loop() or not self._reachable.wait(self._timeout):
                raise self.unavailable()
        try:
            with self._pool.connection(timeout=self._timeout) as conn:
                yield conn
        except PoolTimeout:
            self.went_away("no connection within the pool's timeout")
            raise self.unavailable() from None

    @property
    def reachable(self) -> bool:
        """False from a lost connection until the server answers again."""
        return self._reachable.is_set()

    def unavailable(self) -> DatabaseUnavailable:
        """The error for a call that meets the server unreachable."""
        return DatabaseUnavailable(
            f"PostgreSQL at {redact_url(self.url)} cannot be reached; trying again"
        )

    def went_away(self, reason: str = "a connection broke") -> None:
        """A connection broke: until a new one can be made, calls fail fast, and a thread
        of its own tries to reach the server."""
        if self._closed.is_set():
            return
        if self.unreachable_since is None:
            self.unreachable_since = time.time()
            self.unreachable_reason = reason
        self._reachable.clear()
        if self._probing.acquire(blocking=False):  # else one is trying already
            threading.Thread(target=self._reach, name="lore-postgres-probe", daemon=True).start()

    def _reach(self) -> None:
        """The probe thread: connect until the server answers, then let calls through
        again (the connections the outage broke are dropped from the pool first)."""
        where = redact_url(self.url)
        failures = 0
        try:
            # The pool's idle connections went with the server: drop them now, before
            # another call takes one and fails on it too.
            self._drop_dead()
            while not self._closed.is_set():
                try:
                    psycopg.connect(self.url, connect_timeout=2).close()
                except psycopg.Error as exc:
                    failures += 1
                    if failures == 1:
                        reason = _first_line(exc)
                        self.unreachable_reason = reason
                        log.warning(
                            "PostgreSQL at %s cannot be reached (%s); trying again every %.1f s",
                            where,
                            reason,
                            _PROBE_EVERY,
                        )
                    self._closed.wait(_PROBE_EVERY)
                    continue
                self._drop_dead()
                if failures:
                    log.warning("PostgreSQL at %s answers again", where)
                return
        finally:
            # In this order: a connection lost from now on starts another probe.
            self._probing.release()
            self.unreachable_since = None
            self.unreachable_reason = ""
            self._reachable.set()

    def _drop_dead(self) -> None:
        """Check the pool's idle connections, dropping (and replacing) the broken ones."""
        try:
            self._pool.check()
        except (PoolClosed, psycopg.Error):
            pass  # closing, or the server went again: the next call finds out

    def lock(self, conn: Connection, name: str) -> None:
        """Hold the advisory lock `name` until `conn`'s transaction ends (the keys are
        shared with the lock hub's: one name is one lock)."""
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_NAMESPACE, advisory_key(name)))

    def vacuum(self, tables: Sequence[str]) -> bool:
        """Rewrite these tables (VACUUM FULL) so no old row version keeps erased text;
        False when another session held them and it gave up waiting."""
        if getattr(self._local, "conn", None) is not None:
            return False  # VACUUM cannot run inside a transaction
        with self._pooled() as conn:
            try:
                conn.execute("SET lock_timeout = '5s'")
                conn.execute(f"VACUUM (FULL) {', '.join(tables)}")
            except psycopg.errors.LockNotAvailable:
                return False
            finally:
                conn.execute("RESET lock_timeout")
        return True

    def fetch_one(self, sql: str, args: Any = None) -> DictRow | None:
        with self.connection() as conn:
            return conn.execute(sql, args).fetchone()

    def fetch_all(self, sql: str, args: Any = None) -> list[DictRow]:
        with self.connection() as conn:
            return conn.execute(sql, args).fetchall()

    def close(self) -> None:
        self._closed.set()
        self._pool.close()

    def _migrate(self) -> None:
        # One transaction under one lock: workers starting together wait for the first.
        with self.atomic() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_NAMESPACE, _MIGRATION_KEY))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS lore_migrations (number integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = {row["number"] for row in conn.execute("SELECT number FROM lore_migrations")}
            for number, name, module in migrations():
                if number in applied:
                    continue
                conn.execute(module.SQL)
                conn.execute(
                    "INSERT INTO lore_migrations (number, name) VALUES (%s, %s)", (number, name)
                )


def _first_line(exc: BaseException) -> str:
    """libpq's messages run over several lines; the first says what happened."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _on_event_loop() -> bool:
    """Is this thread running an event loop (where waiting would stall every task)?"""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _configure(conn: Connection) -> None:
    # Times come back in UTC, as the SQLite stores return them.
    conn.execute("SET TIME ZONE 'UTC'")
