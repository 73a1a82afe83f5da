"""The backend port: every store the runtime asks for, held by one object.

`lore.runtime.build` chooses the backend once — SQLite and files (`LocalBackend`),
PostgreSQL (`PostgresBackend`), or in memory (`FakeBackend`, for tests and demos) — and
the runtime hands out its stores. Whatever the backend opened, its `close()` closes.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from lore.ports.chat_ledger import ChatLedger
from lore.ports.memories import MemoryStore
from lore.ports.notes import HistoryLog
from lore.ports.outbox import Outbox
from lore.ports.reminders import ReminderStore
from lore.ports.search import SearchIndexPort
from lore.ports.sessions import SessionStore
from lore.ports.tasks import TaskStore

__all__ = ["STORES", "Backend", "DatabaseState"]

# Every store a backend holds, by the name the runtime hands it out under.
STORES = (
    "memory",
    "search_index",
    "reminders",
    "tasks",
    "outbox",
    "sessions",
    "history",
    "chat_ledger",
)


@dataclass(frozen=True)
class DatabaseState:
    """The storage as last seen, for `/health` and `/metrics`: `ok`, `unreachable` (since
    when, and why: a database server that stopped answering), or `not opened` (nothing
    has asked for a store yet)."""

    state: Literal["ok", "unreachable", "not opened"]
    where: str  # the file, or the server's address (never its password)
    since: float | None = None  # epoch seconds: when it became unreachable
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "state": self.state,
            "where": self.where,
            "since": self.since,
            "reason": self.reason,
        }


class Backend(Protocol):
    """The stores of one storage. The workspace's files (notes, MEMORY.md) stay files
    under the home whatever the backend."""

    @property
    def memory(self) -> MemoryStore: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def reminders(self) -> ReminderStore: ...

    @property
    def chat_ledger(self) -> ChatLedger: ...

    @property
    def tasks(self) -> TaskStore:
        """Scheduled tasks and their runs, on the outbox's storage (their replies enter
        the outbox in a run's own transaction)."""
        ...

    @property
    def search_index(self) -> SearchIndexPort: ...

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def history(self) -> HistoryLog: ...

    @property
    def exists(self) -> bool:
        """Has this storage been created? (Opening a store of one that was not creates it.)"""
        ...

    @property
    def remote(self) -> bool:
        """Does every store call wait on a server (a round trip: a millisecond and more a
        call under load)? Then async code makes the costly ones in a worker thread, where
        on a local database the thread would cost more than the call."""
        ...

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        """Hold `job` for this worker alone: True when it is ours, False when another
        worker holds it (`path`: the lock file a backend of files uses)."""
        ...

    def state(self) -> DatabaseState:
        """The database's state as last seen: read from memory, never a round trip (it
        answers `/health` while the database may be the thing that is down)."""
        ...

    def close(self) -> None:
        """Close whatever the stores opened; stores not opened are not opened now."""
        ...
