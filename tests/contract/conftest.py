"""The `backend` fixture: every contract test runs once per registered backend.

A backend registers a factory that builds its stores for one test and tears them down:

    @register("postgres", pytest.mark.postgres)
    @contextmanager
    def postgres(tmp_path: Path) -> Iterator[Backend]:
        ...  # pytest.skip(...) when its server is not there
        yield Backend(memories=..., reminders=..., sessions=..., history=..., search=...,
                      notes=..., chat_ledger=..., reopen=..., write_old_kind=...,
                      search_with=...)
        # reopen: the same storage, new connections; write_old_kind: a row from the past;
        # search_with: the search index on that storage with another embedder

Tests use only the ports (the Protocols in lore.ports), never a backend's own methods.
The registry is the one way tests run once per backend: `backend_params()` gives its
backends, with their marks, to `backend_name` here, to the property suites, and to the
end-to-end modules' `storage` (tests/postgres_server.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lore.backends.fake.embedder import HashEmbedder
from lore.ports.chat_ledger import ChatLedger
from lore.ports.memories import MemoryStore
from lore.ports.notes import HistoryLog, NotesStore
from lore.ports.outbox import Outbox
from lore.ports.reminders import ReminderStore
from lore.ports.search import SearchIndexPort
from lore.ports.sessions import SessionStore

if TYPE_CHECKING:
    from lore.embed import Embedder


@dataclass
class Backend:
    memories: MemoryStore
    reminders: ReminderStore
    sessions: SessionStore
    history: HistoryLog
    search: SearchIndexPort
    notes: NotesStore
    chat_ledger: ChatLedger
    # Every store opened again on the same storage, as another process would open them.
    reopen: Callable[[], Backend]
    # Give a memory a kind as a database from before kinds were fixed may hold it.
    write_old_kind: Callable[[int, str], None]
    # The search index on the same storage, embedding with another model (None: the
    # storage is the index object itself, so another model is another, empty index).
    search_with: Callable[[Embedder], SearchIndexPort] | None

    @property
    def outbox(self) -> Outbox:
        return self.reminders.outbox


Factory = Callable[[Path], AbstractContextManager[Backend]]
FACTORIES: dict[str, Factory] = {}
MARKS: dict[str, tuple[pytest.MarkDecorator, ...]] = {}


def register(name: str, *marks: pytest.MarkDecorator) -> Callable[[Factory], Factory]:
    """Add a backend; every test run on it carries `marks`."""

    def add(factory: Factory) -> Factory:
        FACTORIES[name] = factory
        MARKS[name] = marks
        return factory

    return add


def backend_params(*names: str) -> list[object]:
    """The registered backends (these, or every one) as pytest parameters with their
    marks: how every test that runs once per backend is parametrised."""
    return [pytest.param(name, marks=MARKS[name], id=name) for name in names or sorted(FACTORIES)]


@register("fake")
@contextmanager
def fake(tmp_path: Path) -> Iterator[Backend]:
    from lore.backends.fake.chat_ledger import FakeChatLedger
    from lore.backends.fake.memories import FakeMemoryStore
    from lore.backends.fake.search_index import FakeSearchIndex
    from lore.backends.fake.sessions import FakeSessions
    from lore.backends.fake.stores import FakeStores

    stores = FakeStores()
    search = FakeSearchIndex(HashEmbedder())
    sessions = FakeSessions()
    memories = stores.memories
    assert isinstance(memories, FakeMemoryStore)
    ledger = FakeChatLedger()

    def write_old_kind(memory_id: int, kind: str) -> None:
        with memories._writing(None) as tables:
            tables.memories[memory_id] = replace(tables.memories[memory_id], kind=kind)

    def same() -> Backend:  # one process's memory is all the storage there is...
        return Backend(
            stores.memories,
            stores.reminders,
            sessions.reopened(),  # ...but each process has handles of its own
            stores.history,
            search,
            stores.notes,
            ledger,
            same,
            write_old_kind,
            None,
        )

    yield same()


@register("local")
@contextmanager
def local(tmp_path: Path) -> Iterator[Backend]:
    from lore.backends.local.chat_ledger import LocalChatLedger
    from lore.backends.local.database import Database
    from lore.backends.local.history import History
    from lore.backends.local.memories import SQLiteMemoryStore
    from lore.backends.local.notes import LocalNotes
    from lore.backends.local.outbox import LocalOutbox
    from lore.backends.local.reminders import SQLiteReminderStore
    from lore.backends.local.search_index import SearchIndex
    from lore.backends.local.sessions import LocalSessions

    home = tmp_path / "contract-home"
    with ExitStack() as opened:

        def open_home() -> Backend:
            db = Database(home / "lore.db")
            opened.callback(db.close)

            def write_old_kind(memory_id: int, kind: str) -> None:
                with db.atomic() as conn:
                    conn.execute("UPDATE memories SET kind = ? WHERE id = ?", (kind, memory_id))

            return Backend(
                memories=SQLiteMemoryStore(db),
                reminders=SQLiteReminderStore(db, LocalOutbox(db)),
                sessions=LocalSessions(home / "sessions", home),
                history=History(home / "workspace" / "memory"),
                search=SearchIndex(db, HashEmbedder()),
                notes=LocalNotes(home / "workspace"),
                chat_ledger=LocalChatLedger(db),
                reopen=open_home,
                write_old_kind=write_old_kind,
                search_with=lambda embedder: SearchIndex(db, embedder),
            )

        yield open_home()


@register("postgres", pytest.mark.postgres)
@contextmanager
def postgres(tmp_path: Path) -> Iterator[Backend]:
    """PostgreSQL for memories, reminders, the outbox, the search index, sessions and the
    history log; notes stay files, as they do when `database_url` is set."""
    from lore.backends.local.notes import LocalNotes
    from lore.backends.postgres.backend import PostgresBackend
    from lore.backends.postgres.search_index import PostgresSearchIndex
    from tests.postgres_server import PostgresUnavailable, empty_lore_database

    try:
        url = empty_lore_database()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    home = tmp_path / "contract-home"
    with ExitStack() as opened:

        def open_home() -> Backend:
            pg = PostgresBackend(url, max_connections=4)
            opened.callback(pg.close)

            def write_old_kind(memory_id: int, kind: str) -> None:
                with pg.db.atomic() as conn:
                    conn.execute("UPDATE memories SET kind = %s WHERE id = %s", (kind, memory_id))

            return Backend(
                memories=pg.memory,
                reminders=pg.reminders,
                sessions=pg.sessions,
                history=pg.history,
                search=PostgresSearchIndex(pg.db, HashEmbedder()),
                notes=LocalNotes(home / "workspace"),
                chat_ledger=pg.chat_ledger,
                reopen=open_home,
                write_old_kind=write_old_kind,
                search_with=lambda embedder: PostgresSearchIndex(pg.db, embedder),
            )

        yield open_home()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # At collection, not import: a backend registered after this module loaded counts too.
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", backend_params())


@pytest.fixture
def backend_name() -> str:
    raise AssertionError("parametrised by pytest_generate_tests")


@pytest.fixture
def backend(backend_name: str, tmp_path: Path) -> Iterator[Backend]:
    with FACTORIES[backend_name](tmp_path) as built:
        yield built
