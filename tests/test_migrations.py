"""Schema migrations: an old database is upgraded on open; a current one is left alone."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from lore.backends.local.database import Database, migrations
from lore.backends.local.memories import SQLiteMemoryStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
LATEST = max(number for number, _, _ in migrations())


def schema(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        return [tuple(row) for row in rows]


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    numbers = [number for number, _, _ in migrations()]
    assert numbers == list(range(1, len(numbers) + 1))
    assert (1, "m001_memories") == migrations()[0][:2]


def test_an_old_version_0_database_is_upgraded_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "lore.db"
    with sqlite3.connect(path) as old:  # what an earlier Lore (or a stray tool) left behind
        old.execute("CREATE TABLE notes (body TEXT)")
        old.execute("INSERT INTO notes VALUES ('kept')")
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 0

    db = Database(path)
    assert db.schema_version == LATEST
    assert db.conn.execute("SELECT body FROM notes").fetchone()[0] == "kept"
    memory, _ = SQLiteMemoryStore(db).remember(
        "cli:default", "咖啡", author="john", via="cli", now=NOW
    )
    assert SQLiteMemoryStore(db).search("cli:default", "咖啡", now=NOW) == [memory]
    db.close()


def test_opening_a_current_database_again_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "lore.db"
    first = Database(path)
    SQLiteMemoryStore(first).remember(
        "cli:default", "John lives in Hualien", author="john", via="cli", now=NOW
    )
    first.close()
    before = schema(path)

    again = Database(path)
    assert again.schema_version == LATEST
    assert [m.content for m in SQLiteMemoryStore(again).active("cli:default", now=NOW)] == [
        "John lives in Hualien"
    ]
    again.close()
    assert schema(path) == before
