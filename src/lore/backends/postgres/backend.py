"""Every store of the PostgreSQL backend over one connection pool, typed as the ports the
runtime asks for (so mypy checks that each store keeps its port's contract)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from lore.backends.postgres.chat_ledger import PostgresChatLedger
from lore.backends.postgres.database import PostgresDatabase
from lore.backends.postgres.history import PostgresHistory
from lore.backends.postgres.live import drafts_written
from lore.backends.postgres.locks import LockHub
from lore.backends.postgres.memories import PostgresMemoryStore
from lore.backends.postgres.outbox import PostgresOutbox
from lore.backends.postgres.reminders import PostgresReminderStore
from lore.backends.postgres.search_index import PostgresSearchIndex
from lore.backends.postgres.sessions import PostgresSessions
from lore.backends.postgres.tasks import PostgresTaskStore
from lore.config import redact_url
from lore.ports.backend import DatabaseState
from lore.ports.chat_ledger import ChatLedger
from lore.ports.memories import MemoryStore
from lore.ports.notes import HistoryLog
from lore.ports.outbox import Outbox
from lore.ports.reminders import ReminderStore
from lore.ports.search import SearchIndexPort
from lore.ports.sessions import SessionStore
from lore.ports.tasks import TaskStore

if TYPE_CHECKING:
    from lore.embed import Embedder

__all__ = ["PostgresBackend"]


class PostgresBackend:
    """Opens (and migrates) the database at `url`; `close()` ends every connection."""

    remote = True  # every call is a round trip to the server

    def __init__(
        self, url: str, *, max_connections: int = 10, embedder: Embedder | None = None
    ) -> None:
        self.db = PostgresDatabase(url, max_size=max_connections)
        outbox = PostgresOutbox(self.db)
        self.memory: MemoryStore = PostgresMemoryStore(self.db)
        self.outbox: Outbox = outbox
        self._reminders = PostgresReminderStore(self.db, outbox)
        self.reminders: ReminderStore = self._reminders
        self.tasks: TaskStore = PostgresTaskStore(self.db, outbox)
        self.search_index: SearchIndexPort = PostgresSearchIndex(self.db, embedder)
        # One connection of its own holds this process's advisory locks (turns, jobs).
        self.locks = LockHub(url, self.db)
        self.sessions: SessionStore = PostgresSessions(self.db, self.locks)
        self.history: HistoryLog = PostgresHistory(self.db)
        self.chat_ledger: ChatLedger = PostgresChatLedger(self.db)

    @property
    def exists(self) -> bool:
        return True  # connected, and migrated

    def state(self) -> DatabaseState:
        db, where = self.db, redact_url(self.db.url)
        if db.reachable:
            return DatabaseState("ok", where)
        return DatabaseState("unreachable", where, db.unreachable_since, db.unreachable_reason)

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        """An advisory lock every worker on this database sees (`path` is not needed)."""
        return self.locks.hold(f"job:{job}", wait=False)

    def close(self) -> None:
        drafts_written()  # the rows of replies just stored go first
        self._reminders.close()  # its LISTEN connection
        self.locks.close()
        self.db.close()
