"""The SQLite reminders table: the index that finds what is due, and a database from
before reminders. What every reminder store does is in tests/contract/."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database, migrations
from lore.backends.local.reminders import SQLiteReminderStore
from lore.ports.reminders import ReminderStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


def add(store: ReminderStore, text: str = "take out the trash", *, scope: str = "cli:default",
        minutes: float = 10, recurrence: str | None = None) -> int:  # fmt: skip
    reminder = store.add(
        scope, "john", text, NOW + timedelta(minutes=minutes), timezone="Asia/Taipei",
        now=NOW, recurrence=recurrence, channel="cli",
    )  # fmt: skip
    return reminder.id


def test_finding_due_reminders_uses_the_status_due_index(db: Database) -> None:
    plan = " ".join(
        row[3]
        for row in db.conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM reminders "
            "WHERE status = 'pending' AND due_at <= 0 ORDER BY due_at LIMIT 100"
        )
    )
    assert "INDEX reminders_due" in plan
    assert "TEMP B-TREE" not in plan


def test_a_database_from_before_reminders_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for number, _, module in migrations():  # the schema as it was before reminders
        if number < 2:
            module.apply(old) if hasattr(module, "apply") else old.executescript(module.SQL)
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    db = Database(path)
    try:
        assert db.schema_version >= 2
        store = SQLiteReminderStore(db)
        assert store.list("cli:default") == []
        add(store)
        assert len(store.list("cli:default")) == 1
    finally:
        db.close()
