"""The local backend: SQLite (`lore.db`) and files under the home. Each store opens on
first use, so a command that needs one store opens only what that store needs."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lore.ports.backend import DatabaseState

if TYPE_CHECKING:
    from lore.backends.local.database import Database
    from lore.backends.local.outbox import LocalOutbox
    from lore.backends.local.reminders import SQLiteReminderStore
    from lore.config import Config
    from lore.embed import Embedder
    from lore.ports.chat_ledger import ChatLedger
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import HistoryLog
    from lore.ports.outbox import Outbox
    from lore.ports.reminders import ReminderStore
    from lore.ports.search import SearchIndexPort
    from lore.ports.sessions import SessionStore
    from lore.ports.tasks import TaskStore

__all__ = ["LocalBackend"]


class LocalBackend:
    remote = False  # SQLite and files, in this process

    def __init__(self, config: Config, *, embedder: Embedder | None = None) -> None:
        self.config = config
        self._embedder = embedder

    @cached_property
    def db(self) -> Database:
        from lore.backends.local.database import Database

        return Database(self.config.db_path)

    @cached_property
    def memory(self) -> MemoryStore:
        from lore.backends.local.memories import SQLiteMemoryStore

        return SQLiteMemoryStore(self.db)

    @cached_property
    def outbox(self) -> Outbox:
        return self._outbox

    @cached_property
    def _outbox(self) -> LocalOutbox:
        from lore.backends.local.outbox import LocalOutbox

        return LocalOutbox(self.db)

    @cached_property
    def reminders(self) -> ReminderStore:
        return self._reminders

    @cached_property
    def _reminders(self) -> SQLiteReminderStore:
        from lore.backends.local.reminders import SQLiteReminderStore

        return SQLiteReminderStore(self.db, self._outbox)

    @cached_property
    def tasks(self) -> TaskStore:
        from lore.backends.local.tasks import SQLiteTaskStore

        return SQLiteTaskStore(self.db, self._outbox)

    @cached_property
    def chat_ledger(self) -> ChatLedger:
        from lore.backends.local.chat_ledger import LocalChatLedger

        return LocalChatLedger(self.db)

    @cached_property
    def search_index(self) -> SearchIndexPort:
        from lore.backends.local.search_index import SearchIndex

        return SearchIndex(self.db, self._embedder)

    @cached_property
    def sessions(self) -> SessionStore:
        from lore.backends.local.sessions import LocalSessions

        return LocalSessions(self.config.sessions_dir, self.config.home)

    @cached_property
    def history(self) -> HistoryLog:
        from lore.backends.local.history import History

        return History(self.config.workspace / "memory")

    @property
    def exists(self) -> bool:
        return "db" in self.__dict__ or self.config.db_path.exists()

    def state(self) -> DatabaseState:
        """A file on this machine: `ok` once opened (a damaged file does not open: the
        command that met it reported it)."""
        where = str(self.config.db_path)
        return DatabaseState("ok" if "db" in self.__dict__ else "not opened", where)

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        """A lock file held for the job; with no file, the job is always ours."""
        if path is None:
            return nullcontext(True)
        from lore.files import try_lock

        return try_lock(path)

    def close(self) -> None:
        if "_reminders" in self.__dict__:
            self._reminders.close()  # its doorbell
        if "db" in self.__dict__:
            self.db.close()
