"""The in-memory backend: every store in this process's memory, for tests and demos.

    lore = build(config, backend=FakeBackend())

Nothing is written to the home's database or its transcripts (the workspace's files,
which every backend keeps as files, still live under the home).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lore.backends.fake.chat_ledger import FakeChatLedger
from lore.backends.fake.embedder import HashEmbedder
from lore.backends.fake.history import FakeHistory
from lore.backends.fake.memories import FakeMemoryStore
from lore.backends.fake.reminders import FakeReminderStore
from lore.backends.fake.search_index import FakeSearchIndex
from lore.backends.fake.sessions import FakeSessions
from lore.errors import ConfigError
from lore.ports.backend import DatabaseState

if TYPE_CHECKING:
    from lore.embed import Embedder
    from lore.ports.chat_ledger import ChatLedger
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import HistoryLog
    from lore.ports.outbox import Outbox
    from lore.ports.reminders import ReminderStore
    from lore.ports.search import SearchIndexPort
    from lore.ports.sessions import SessionStore
    from lore.ports.tasks import TaskStore

__all__ = ["FakeBackend"]


class FakeBackend:
    """Every port in memory; `embedder` defaults to the hash embedder (no model loaded)."""

    remote = False

    def __init__(self, *, embedder: Embedder | None = None) -> None:
        self._reminders = FakeReminderStore()
        self._memory = FakeMemoryStore()
        self._chat_ledger = FakeChatLedger()
        self._search = FakeSearchIndex(embedder or HashEmbedder())
        self._sessions = FakeSessions()
        self._history = FakeHistory()
        self._held: set[str] = set()
        self._lock = threading.Lock()

    @property
    def memory(self) -> MemoryStore:
        return self._memory

    @property
    def outbox(self) -> Outbox:
        return self._reminders.outbox

    @property
    def reminders(self) -> ReminderStore:
        return self._reminders

    @property
    def tasks(self) -> TaskStore:
        """Scheduled tasks run turns whose replies a database's outbox holds: this
        backend keeps none."""
        raise ConfigError("scheduled tasks need a database: SQLite (the default) or PostgreSQL")

    @property
    def chat_ledger(self) -> ChatLedger:
        return self._chat_ledger

    @property
    def search_index(self) -> SearchIndexPort:
        return self._search

    @property
    def sessions(self) -> SessionStore:
        return self._sessions

    @property
    def history(self) -> HistoryLog:
        return self._history

    @property
    def exists(self) -> bool:
        return True

    def state(self) -> DatabaseState:
        return DatabaseState("ok", "memory")

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        return self._hold(job)

    @contextmanager
    def _hold(self, job: str) -> Iterator[bool]:
        with self._lock:
            free = job not in self._held
            self._held.add(job)
        try:
            yield free
        finally:
            if free:
                with self._lock:
                    self._held.discard(job)

    def close(self) -> None:
        """Nothing to close: it all goes with the process."""
