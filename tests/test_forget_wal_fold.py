"""Forgetting a memory folds the WAL's old pages into the database at once; when a
statement still open on the shared connection (a search another thread is reading) keeps
the WAL, the forget stands and the fold comes with the next forget or batch."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_forget_while_a_read_is_open_stands_and_the_wal_is_folded_later(
    tmp_path: Path,
) -> None:
    db = Database(tmp_path / "lore.db")
    store = SQLiteMemoryStore(db)
    kept, _ = store.remember("cli:default", "Анна любит джаз", author="j", via="cli", now=NOW)
    gone, _ = store.remember("cli:default", "約翰住在花蓮", author="j", via="cli", now=NOW)
    reading = db.conn.execute("SELECT id FROM memories")
    reading.fetchone()  # a statement still open on the connection
    assert store.forget("cli:default", gone.id, by="j", via="cli", now=NOW) == [gone.id]
    reading.close()
    assert [m.id for m in store.active("cli:default", now=NOW)] == [kept.id]
    with store.batch():
        store.remember("cli:default", "John walks the dog", author="j", via="cli", now=NOW)
    wal = tmp_path / "lore.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # folded and truncated
    assert "花蓮".encode() not in (tmp_path / "lore.db").read_bytes()
    db.close()
