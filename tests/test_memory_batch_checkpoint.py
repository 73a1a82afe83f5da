from datetime import UTC, datetime
from pathlib import Path

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_batch_committed_while_a_read_is_open_is_kept_and_raises_nothing(tmp_path: Path) -> None:
    db = Database(tmp_path / "lore.db")
    store = SQLiteMemoryStore(db)
    for n in range(3):
        store.remember("cli:default", f"fact {n}", author="john", via="tool", now=NOW)
    reading = db.conn.execute("SELECT id FROM memories")
    reading.fetchone()  # a search part-way through its rows
    with store.batch():
        store.remember("cli:default", "John lives in Taipei", author="john", via="tool", now=NOW)
    reading.close()
    assert any(m.content == "John lives in Taipei" for m in store.active("cli:default", now=NOW))
    db.close()
