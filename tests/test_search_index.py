"""The SQLite search index's own: the vectors another connection caches follow what is
written and removed, and a vector is stored as int8. What every search index does is in
tests/contract/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lore.backends.local.database import Database
from lore.backends.local.search_index import SearchIndex
from lore.embed import default_embedder
from lore.ports.search import Entry

T0 = 1_764_000_000.0  # late 2025, Unix seconds
NOW = T0 + 86_400


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


@pytest.fixture
def index(db: Database) -> SearchIndex:
    return SearchIndex(db, default_embedder())


def message(text: str, *, scope: str = "cli:a", source: str = "s1", locator: int = 0) -> Entry:
    return Entry(scope, "message", source, locator, T0, text, "john")


def test_another_connection_sees_new_and_removed_vectors(tmp_path: Path) -> None:
    first_db, second_db = Database(tmp_path / "lore.db"), Database(tmp_path / "lore.db")
    try:
        writer, reader = SearchIndex(first_db), SearchIndex(second_db)
        query = reader.embedder.embed_queries(["violin lessons"])[0]
        writer.put([message("my daughter started violin lessons", locator=0)])
        writer.embed_pending()
        assert len(reader.vector_search(["cli:a"], query, limit=5, now=NOW)) == 1  # cached now

        writer.put([message("we adopted a cat named Mochi", locator=1)])
        writer.embed_pending()
        assert len(reader.vector_search(["cli:a"], query, limit=5, now=NOW)) == 2

        writer.remove_source("message", "s1")
        assert reader.vector_search(["cli:a"], query, limit=5, now=NOW) == []
    finally:
        first_db.close()
        second_db.close()


def test_vectors_are_stored_as_int8_without_losing_the_ranking(index: SearchIndex) -> None:
    (entry_id,) = index.put([message("The train to Hualien leaves at nine")])
    index.embed_pending()
    exact = index.embedder.embed_passages(["john: The train to Hualien leaves at nine"])[0]

    stored = index.vectors_of("cli:a", [entry_id])[entry_id]

    assert float(np.dot(stored, exact)) > 0.999
    (blob,) = index.db.conn.execute("SELECT vector FROM search_vectors").fetchone()
    assert len(blob) == index.embedder.dim  # one byte a dimension
