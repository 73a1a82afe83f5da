"""Forget erases: afterwards the text is nowhere in lore.db, lore.db-wal or lore.db-shm.

SQLite leaves deleted bytes in free pages unless told otherwise, keeps old page images in
the WAL until a checkpoint, and FTS5 (before 3.42) keeps a deleted row's tokens in its
index segments until they are merged. So this reads the raw files, not the tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.ports.memories import MemoryStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"

OLD = "Zanzibarquux used to live on Oldtownstrasse"
NEW = "Zanzibarquux lives at Qwertyplatz, 我的暗号是紫色长颈鹿"
KEYWORD = "Flibbertigibbet"
# The texts and what the index derives from them: words, stems, CJK bigrams, keywords.
NEEDLES = [
    OLD,
    NEW,
    "Zanzibarquux",
    "zanzibarquux",
    "oldtownstrasse",
    "qwertyplatz",
    "紫色长颈鹿",
    "长颈",
    "颈鹿",
    "暗号",
    KEYWORD,
    KEYWORD.lower(),
]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


def raw_files(db: Database) -> dict[str, bytes]:
    path = Path(str(db.path))
    files = {}
    for suffix in ("", "-wal", "-shm"):
        candidate = path.with_name(path.name + suffix)
        if candidate.exists():
            files[candidate.name] = candidate.read_bytes()
    return files


def traces(db: Database) -> list[tuple[str, str]]:
    return [
        (name, needle)
        for name, data in raw_files(db).items()
        for needle in NEEDLES
        if needle.encode("utf-8") in data
    ]


def fill(store: MemoryStore, count: int, start: int) -> None:
    for i in range(start, start + count):
        store.remember(
            HOME,
            f"other fact {i}: 我喜欢喝茶 and walking the dog",
            author="john",
            via="tool",
            now=NOW,
        )


def test_forget_leaves_no_trace_of_any_version_in_the_database_files(db: Database) -> None:
    store = SQLiteMemoryStore(db)
    fill(store, 150, 0)
    old, _ = store.remember(HOME, OLD, keywords=[KEYWORD], author="john", via="tool", now=NOW)
    fill(store, 150, 150)
    db.checkpoint()  # the first version is now in the main file, not only in the WAL
    new = store.supersede(HOME, old.id, NEW, author="john", via="tool", now=NOW + timedelta(days=1))
    fill(store, 50, 300)  # and the second one sits in WAL frames
    assert {needle for _, needle in traces(db)} >= {OLD, NEW, KEYWORD.lower()}

    store.forget(HOME, new.id, by="mary", via="tool", now=NOW + timedelta(days=2))

    assert traces(db) == []
    assert store.search(HOME, "Zanzibarquux", now=NOW) == []
    assert len(store.search(HOME, "喝茶", now=NOW, limit=100)) == 100  # the rest still indexed


def test_the_fts_shadow_tables_and_the_audit_hold_no_text_after_forget(db: Database) -> None:
    store = SQLiteMemoryStore(db)
    memory, _ = store.remember(HOME, NEW, keywords=[KEYWORD], author="john", via="tool", now=NOW)
    store.forget(HOME, memory.id, by="john", via="cli", now=NOW)
    conn = db.conn
    conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memory_fts, row)")
    terms = {row[0] for row in conn.execute("SELECT term FROM temp.vocab")}
    assert terms.isdisjoint({"zanzibarquux", "qwertyplatz", "紫色", "长颈", "鹿", KEYWORD.lower()})
    assert conn.execute("SELECT count(*) FROM memory_fts_content").fetchone()[0] == 0
    row = conn.execute("SELECT content, keywords, status FROM memories").fetchone()
    assert tuple(row) == ("", "[]", "forgotten")
    audit = [tuple(r) for r in conn.execute("SELECT action, actor, via, detail FROM memory_audit")]
    assert audit == [
        ("add", "john", "tool", None),
        ("forget", "john", "cli", f'{{"erased": [{memory.id}]}}'),
    ]


def test_forget_inside_an_outer_transaction_erases_once_it_commits(db: Database) -> None:
    store = SQLiteMemoryStore(db)
    memory, _ = store.remember(HOME, NEW, keywords=[KEYWORD], author="john", via="tool", now=NOW)
    with db.atomic():
        store.forget(HOME, memory.id, by="john", via="tool", now=NOW)
    db.checkpoint()  # the caller owns the transaction, so the checkpoint too
    assert traces(db) == []
