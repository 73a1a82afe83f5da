"""The kept count behind "N older memories not shown": it always equals a row-by-row
count of live memories, whatever writes, expiries and scopes came before."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from lore.backends.local.database import Database, _split_sql, migrations
from lore.backends.local.memories import SQLiteMemoryStore as MemoryStore
from lore.memory.block import render_memory_block
from tests.memory_notes import note

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "telegram:-100200"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


@pytest.fixture
def store(db: Database) -> MemoryStore:
    return MemoryStore(db)


def total(store: MemoryStore, scope: str = HOME, now: datetime = NOW) -> int:
    return store.active_page(scope, now=now, limit=1).total


def test_the_count_follows_remember_supersede_and_forget(store: MemoryStore) -> None:
    first = note(store, "John drinks oat-milk flat whites")
    note(store, "妈妈住在花莲")
    third = note(store, "Маша любит чай с мятой")
    assert total(store) == store.live_count(HOME, now=NOW) == 3
    store.supersede(HOME, first, "John drinks black coffee now", author="john", via="tool", now=NOW)
    assert total(store) == store.live_count(HOME, now=NOW) == 3
    store.forget(HOME, third, by="john", via="tool", now=NOW)
    assert total(store) == store.live_count(HOME, now=NOW) == 2


def test_a_memory_stops_counting_once_it_expires(store: MemoryStore) -> None:
    note(store, "Flight to Taipei on Friday", expires_at=NOW + timedelta(days=2))
    note(store, "明天下午三点开会", expires_at=NOW + timedelta(hours=1))
    note(store, "John lives in Hualien")
    assert total(store) == 3
    assert total(store, now=NOW + timedelta(hours=2)) == 2
    later = NOW + timedelta(days=3)
    assert total(store, now=later) == store.live_count(HOME, now=later) == 1


def test_each_scope_counts_only_its_own_memories(store: MemoryStore) -> None:
    note(store, "John lives in Hualien")
    for n in range(4):
        note(store, f"Group fact number {n}", scope=GROUP)
    assert (total(store), total(store, GROUP)) == (1, 4)
    assert total(store, "cli:empty") == 0


def test_imported_memories_are_counted(store: MemoryStore) -> None:
    note(store, "John lives in Hualien")
    exported = store.export(HOME)
    result = store.import_(GROUP, exported, by="john", via="cli", now=NOW)
    assert len(result.added) == 1
    assert total(store, GROUP) == store.live_count(GROUP, now=NOW) == 1


def test_rows_written_by_plain_sql_are_counted_too(db: Database, store: MemoryStore) -> None:
    at = NOW.isoformat()
    with db.atomic() as conn:
        conn.executemany(
            "INSERT INTO memories (scope, content, kind, author, created_at, updated_at, status)"
            " VALUES (?, ?, 'fact', 'john', ?, ?, ?)",
            [(HOME, "active one", at, at, "active"), (HOME, "old one", at, at, "superseded")],
        )
        conn.execute("UPDATE memories SET scope = ? WHERE content = 'active one'", (GROUP,))
    assert (total(store), total(store, GROUP)) == (0, 1)
    with db.atomic() as conn:
        conn.execute("DELETE FROM memories WHERE content = 'active one'")
    assert total(store, GROUP) == 0


def test_the_block_footer_uses_the_kept_count(store: MemoryStore) -> None:
    for n in range(60):
        note(store, f"Fact {n}: John planted tomato number {n} in the garden")
    block = render_memory_block(
        store, HOME, budget_chars=600, now=NOW, zone=ZoneInfo("Asia/Taipei")
    )
    assert block.hidden_count == 60 - len(block.shown_ids)
    assert f"{block.hidden_count} older memories not shown." in block.text


def test_an_existing_database_gets_its_counts_on_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "lore.db"
    with sqlite3.connect(path) as old:  # a database from before the counts existed
        for number, _name, module in migrations():
            if number >= 7:
                break
            if getattr(module, "SQL", None):
                for statement in _split_sql(module.SQL):
                    old.execute(statement)
            else:
                module.apply(old)
            old.execute(f"PRAGMA user_version = {number}")
        at = NOW.isoformat()
        old.executemany(
            "INSERT INTO memories (scope, content, kind, author, created_at, updated_at, status)"
            " VALUES (?, ?, 'fact', 'john', ?, ?, ?)",
            [(HOME, "a", at, at, "active"), (HOME, "b", at, at, "active"),
             (GROUP, "c", at, at, "active"), (HOME, "d", at, at, "forgotten")],
        )  # fmt: skip
    db = Database(path)
    try:
        store = MemoryStore(db)
        assert (total(store), total(store, GROUP)) == (2, 1)
    finally:
        db.close()
