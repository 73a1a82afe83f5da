"""What every search index does: entries found by text as soon as they are written and by
meaning once embedded, scopes applied inside each query, entries replaced by their place
(kind, source, locator) and by source, expiry, source records and stats."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from lore.backends.fake.embedder import HashEmbedder
from lore.embed import default_embedder
from lore.messages import Message
from lore.ports.search import Entry, SearchIndexPort, SourceRecord
from lore.search import hybrid
from tests.contract.conftest import Backend

T0 = 1_764_000_000.0  # late 2025, Unix seconds
NOW = T0 + 86_400
HOME = "cli:default"
GROUP = "line:group:family"


@pytest.fixture
def index(backend: Backend) -> SearchIndexPort:
    return backend.search


def message(
    text: str,
    *,
    scope: str = HOME,
    source: str = "s1",
    locator: int = 0,
    expires_at: float | None = None,
    extra: str = "",
) -> Entry:
    return Entry(
        scope, "message", source, locator, T0, text, "john", extra=extra, expires_at=expires_at
    )


def texts(index: SearchIndexPort, ids: list[int]) -> list[str]:
    found = index.fetch(ids)
    return [found[i].text for i in ids]


def needs_real_search(backend_name: str) -> None:
    if backend_name == "fake":
        pytest.skip("the in-memory index has no word segmentation, stemming or ranking")


@pytest.fixture
def judged(backend: Backend) -> SearchIndexPort:
    """The backend's index embedding with the real model (for tests that judge meaning)."""
    if backend.search_with is None:
        from lore.backends.fake.search_index import FakeSearchIndex

        return FakeSearchIndex(default_embedder())
    return backend.search_with(default_embedder())


def test_an_entry_is_found_by_text_as_soon_as_it_is_written(index: SearchIndexPort) -> None:
    ids = index.put(
        [
            message("We are going to Hualien next week", locator=0),
            message("明天下午三点开会", locator=1),
            message("Мама любит кофе", locator=2),
        ]
    )
    for query, expected in [("hualien", ids[0]), ("开会", ids[1]), ("кофе", ids[2])]:
        assert index.text_search([HOME], query, limit=5, now=NOW) == [expected]
    stored = index.fetch([ids[1]])[ids[1]]
    assert (stored.scope, stored.kind, stored.source, stored.locator, stored.at) == (
        HOME,
        "message",
        "s1",
        1,
        T0,
    )
    assert stored.display == "john: 明天下午三点开会"
    assert index.text_search([HOME], "   ", limit=5, now=NOW) == []


def test_the_scope_is_applied_inside_the_query(index: SearchIndexPort) -> None:
    mine = index.put([message(f"coffee {n} 咖啡", locator=n) for n in range(3)])
    theirs = index.put([message("coffee 咖啡", scope=GROUP, source="s2")])
    assert sorted(index.text_search([HOME], "咖啡", limit=10, now=NOW)) == sorted(mine)
    assert index.text_search([GROUP], "coffee", limit=10, now=NOW) == theirs
    both = index.text_search([HOME, GROUP], "coffee", limit=10, now=NOW)
    assert sorted(both) == sorted(mine + theirs)
    assert len(index.text_search([HOME, GROUP], "coffee", limit=2, now=NOW)) == 2
    assert index.text_search([], "coffee", limit=10, now=NOW) == []
    assert index.text_search(["telegram:42"], "coffee", limit=10, now=NOW) == []


def test_the_extra_text_is_matched_but_never_shown(index: SearchIndexPort) -> None:
    [entry_id] = index.put([message("see you then", extra="2026-11-30 周一 понедельник")])
    assert index.text_search([HOME], "понедельник", limit=5, now=NOW) == [entry_id]
    assert index.fetch([entry_id])[entry_id].text == "see you then"


def test_writing_an_entry_again_in_its_place_replaces_it(index: SearchIndexPort) -> None:
    [old] = index.put([message("the first draft", locator=3)])
    index.embed_pending()
    [new] = index.put([message("the second draft", locator=3)])
    assert index.fetch([old]) == {}
    assert texts(index, [new]) == ["the second draft"]
    assert index.text_search([HOME], "first", limit=5, now=NOW) == []
    assert index.stats().entries["message"] == 1
    assert index.stats().vectors == 0  # the old vector went with the old text


def test_a_sources_entries_get_consecutive_ids_in_order(index: SearchIndexPort) -> None:
    ids = index.put([message(f"turn {n}", locator=n) for n in range(5)])
    assert ids == list(range(ids[0], ids[0] + 5))


def test_replacing_a_source_swaps_every_entry_of_it_and_keeps_its_record(
    index: SearchIndexPort,
) -> None:
    index.put([message("old line one", locator=0), message("old line two", locator=1)])
    other = index.put([message("another session", source="s2")])
    record = SourceRecord("message", "s1", HOME, 123, 456, "abc")
    index.replace_source("message", "s1", [message("new line", locator=0)], record)
    assert index.text_search([HOME], "old", limit=5, now=NOW) == []
    assert len(index.text_search([HOME], "new line", limit=5, now=NOW)) == 1
    assert index.source_records("message") == {"s1": record}
    moved = SourceRecord("message", "s1", HOME, 999, 456, "abc")
    index.replace_source_record(moved)
    assert index.source_records("message") == {"s1": moved}
    assert index.source_record("message", "s1") == moved
    assert index.source_record("message", "s2") is None
    assert index.remove_source("message", "s1") == 1
    assert index.source_records("message") == {}
    assert index.text_search([HOME], "another", limit=5, now=NOW) == other


def test_removing_a_memory_removes_its_entry_only(index: SearchIndexPort) -> None:
    index.put(
        [
            Entry(HOME, "memory", "", 7, T0, "我每天早上喝美式咖啡"),
            Entry(HOME, "memory", "", 8, T0, "I drink tea"),
        ]
    )
    assert index.remove_memory(7)
    assert not index.remove_memory(7)
    assert index.text_search([HOME], "咖啡", limit=5, now=NOW) == []
    assert len(index.text_search([HOME], "tea", limit=5, now=NOW)) == 1


def test_expired_entries_are_found_by_neither_search(index: SearchIndexPort) -> None:
    [entry_id] = index.put([message("the flight lands Thursday", expires_at=NOW)])
    index.embed_pending()
    query = index.embedder.embed_queries(["the flight lands Thursday"])[0]
    assert index.text_search([HOME], "flight", limit=5, now=NOW - 1) == [entry_id]
    assert [i for i, _ in index.vector_search([HOME], query, limit=5, now=NOW - 1)] == [entry_id]
    assert index.text_search([HOME], "flight", limit=5, now=NOW) == []
    assert index.vector_search([HOME], query, limit=5, now=NOW) == []


def test_embedding_makes_entries_findable_by_meaning_within_their_scopes(
    index: SearchIndexPort,
) -> None:
    ids = index.put(
        [
            message("we booked the train to Hualien", locator=0),
            message("Мама любит кофе по утрам", locator=1),
            message("we booked the train to Hualien", scope=GROUP, source="s2"),
        ]
    )
    assert index.pending_vectors() == 3
    seen: list[int] = []
    assert index.embed_pending(batch=2, progress=seen.append) == 3
    assert sum(seen) == 3 and index.pending_vectors() == 0
    query = index.embedder.embed_queries(["train to Hualien"])[0]
    found = index.vector_search([HOME], query, limit=5, now=NOW)
    assert [i for i, _ in found][0] == ids[0]
    assert ids[2] not in [i for i, _ in found]
    assert [score for _, score in found] == sorted((s for _, s in found), reverse=True)
    assert index.embed_pending() == 0


def test_embedding_only_the_recent_leaves_an_older_backlog_waiting(
    index: SearchIndexPort,
) -> None:
    old = Entry(HOME, "message", "s1", 0, T0, "我们上个月去了花莲", "john")
    new = Entry(HOME, "message", "s1", 1, NOW, "Сегодня мы купили билеты", "john")
    index.put([old, new])
    assert index.embed_pending(since=NOW - 60) == 1  # what a turn just wrote
    assert index.pending_vectors() == 1
    assert index.embed_pending() == 1


def test_the_waiting_are_counted_by_date_and_kind(index: SearchIndexPort) -> None:
    index.put(
        [
            Entry(HOME, "message", "s1", 0, T0, "我们上个月去了花莲", "john"),
            Entry(HOME, "message", "s1", 1, NOW, "Сегодня мы купили билеты", "john"),
            Entry(HOME, "memory", "", 7, NOW, "John bought the train tickets"),
        ]
    )
    assert index.pending_vectors() == 3
    assert index.pending_vectors(since=NOW - 60) == 2
    assert index.pending_vectors(since=NOW - 60, kinds=("memory", "note")) == 1
    assert index.pending_vectors(kinds=("message",)) == 2
    assert index.pending_vectors(since=NOW + 60) == 0


def test_a_chinese_question_with_a_date_finds_that_days_english_message(
    index: SearchIndexPort, backend_name: str
) -> None:
    """The day of a message is indexed as people write it, in Chinese too."""
    from zoneinfo import ZoneInfo

    from lore.search.sources import session_entries

    needs_real_search(backend_name)
    zone = ZoneInfo("Asia/Taipei")
    messages: list[Message] = [
        {"role": "user", "content": "We went hiking today", "timestamp": "2023-05-08T02:00:00Z"},
        {"role": "user", "content": "We went hiking again", "timestamp": "2023-06-19T02:00:00Z"},
    ]
    index.put(session_entries("s1", HOME, messages, default_at=T0, zone=zone))
    ids = index.text_search([HOME], "2023年5月8日我们做了什么？", limit=5, now=NOW)
    assert texts(index, ids)[0] == "We went hiking today"
    ids = index.text_search([HOME], "2023年6月19日", limit=5, now=NOW)
    assert texts(index, ids)[0] == "We went hiking again"


def test_stats_count_entries_sources_scopes_vectors_and_the_waiting(
    index: SearchIndexPort,
) -> None:
    index.put([message("one", locator=0), message("two", locator=1)])
    index.put([message("three", scope=GROUP, source="s2")])
    index.put([Entry(HOME, "memory", "", 7, T0, "a memory")])
    index.embed_pending(limit=1)
    stats = index.stats()
    assert stats.entries == {"memory": 1, "note": 0, "message": 3}
    assert stats.sources == {"memory": 1, "note": 0, "message": 2}
    assert (stats.scopes, stats.vectors, stats.pending_vectors) == (2, 1, 3)
    assert stats.embedder == index.embedder.name


def test_clear_empties_the_index(index: SearchIndexPort) -> None:
    index.put([message("one")])
    index.replace_source_record(SourceRecord("note", "a.md", HOME, 1, 2, "d"))
    index.clear()
    assert index.text_search([HOME], "one", limit=5, now=NOW) == []
    assert index.source_records("note") == {} and index.stats().entries["message"] == 0


def test_an_unknown_kind_is_a_programming_error_and_writes_nothing(
    index: SearchIndexPort,
) -> None:
    with pytest.raises(ValueError, match="kind"):
        index.put([message("fine"), Entry(HOME, "rumour", "", 0, T0, "nope")])
    assert index.text_search([HOME], "fine", limit=5, now=NOW) == []


def test_a_failed_batch_writes_nothing(index: SearchIndexPort) -> None:
    with pytest.raises(RuntimeError), index.batch():
        index.put([message("written then undone")])
        raise RuntimeError("stopped")
    assert index.text_search([HOME], "undone", limit=5, now=NOW) == []


def test_chinese_and_russian_text_is_found_by_its_words(
    index: SearchIndexPort, backend_name: str
) -> None:
    needs_real_search(backend_name)
    index.put(
        [
            message("我每天早上喝美式咖啡", locator=0),
            message("Мама живёт в Москве", locator=1),
            message("The quarterly tax report is due in April", locator=2),
        ]
    )
    assert texts(index, index.text_search([HOME], "咖啡", limit=5, now=NOW)) == [
        "我每天早上喝美式咖啡"
    ]
    assert texts(index, index.text_search([HOME], "Москва", limit=5, now=NOW)) == [
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
    index: SearchIndexPort, backend_name: str, common: str, rare: str, query: str
) -> None:
    needs_real_search(backend_name)
    # Both match one word of the query once; the word few entries hold weighs more (BM25).
    commons = index.put([message(f"{common} {n}", locator=n) for n in range(12)])
    [rare_id] = index.put([message(rare, locator=99)])
    found = index.text_search([HOME], query, limit=20, now=NOW)
    assert found[0] == rare_id
    assert sorted(found[1:]) == sorted(commons)


def test_a_shorter_entry_outranks_a_longer_one_with_the_same_match(
    index: SearchIndexPort, backend_name: str
) -> None:
    needs_real_search(backend_name)
    filler = " ".join(f"word{n}" for n in range(40))
    index.put([message(f"unrelated entry {n}", locator=n) for n in range(10)])
    [long_id, short_id] = index.put(
        [message(f"Hualien {filler}", locator=20), message("Hualien trip", locator=21)]
    )
    assert index.text_search([HOME], "hualien", limit=5, now=NOW) == [short_id, long_id]


def test_the_scope_filter_of_a_vector_search_is_inside_the_query(index: SearchIndexPort) -> None:
    # Another scope holds many better matches; a filter applied after a top-k would
    # leave nothing for the group.
    crowd = [message(f"redis redis cluster note {n}", source="crowd", locator=n) for n in range(60)]
    index.put([*crowd, message("a redis mention", scope=GROUP, source="b")])
    index.embed_pending(batch=32)
    query = index.embedder.embed_queries(["redis cluster"])[0]
    by_text = index.text_search([GROUP], "redis cluster", limit=1, now=NOW)
    by_vector = index.vector_search([GROUP], query, limit=1, now=NOW)
    assert texts(index, by_text) == ["a redis mention"]
    assert texts(index, [i for i, _ in by_vector]) == ["a redis mention"]


def test_a_stored_vector_keeps_the_ranking(index: SearchIndexPort) -> None:
    (entry_id,) = index.put([message("The train to Hualien leaves at nine")])
    index.embed_pending()
    exact = index.embedder.embed_passages(["john: The train to Hualien leaves at nine"])[0]
    stored = index.vectors_of(HOME, [entry_id])[entry_id]
    assert float(np.dot(stored, exact)) > 0.999


def test_vectors_of_another_model_are_dropped_and_made_again(backend: Backend) -> None:
    if backend.search_with is None:
        pytest.skip("the in-memory index is its own storage: another model is another index")
    backend.search.put([message("a line to embed")])
    assert backend.search.embed_pending() == 1

    class OtherModel(HashEmbedder):
        name = "other/model"

    other = backend.search_with(OtherModel())
    assert other.embed_pending() == 1
    assert other.stats().embedder == "other/model"


def test_memory_writes_queue_and_retire_index_entries(backend: Backend) -> None:
    if backend.search_with is None:
        pytest.skip("nothing feeds the in-memory index's memory queue")
    memories, index = backend.memories, backend.search
    now = datetime.fromtimestamp(NOW, UTC)
    memory, _ = memories.remember(HOME, "John lives in 花莲", author="j", via="tool", now=now)
    assert index.queued_memories() == [(memory.id, HOME)]
    index.put([Entry(HOME, "memory", "", memory.id, NOW, memory.content)])
    index.dequeue_memories([memory.id])
    assert not index.has_queued_memories()
    assert len(index.text_search([HOME], "花莲", limit=5, now=NOW)) == 1
    memories.forget(HOME, memory.id, by="j", via="tool", now=now)
    assert index.text_search([HOME], "花莲", limit=5, now=NOW) == []
    assert index.stats().entries["memory"] == 0


def test_clear_can_queue_every_memory_again(backend: Backend) -> None:
    if backend.search_with is None:
        pytest.skip("nothing feeds the in-memory index's memory queue")
    now = datetime.fromtimestamp(NOW, UTC)
    memory, _ = backend.memories.remember(HOME, "likes tea", author="j", via="tool", now=now)
    backend.search.put([message("a message")])
    backend.search.clear(requeue_memories=True)
    assert sum(backend.search.stats().entries.values()) == 0
    assert backend.search.queued_memories() == [(memory.id, HOME)]


@pytest.mark.search_quality
def test_embedding_makes_an_entry_searchable_by_meaning(judged: SearchIndexPort) -> None:
    judged.put(
        [
            message("I drink an americano every morning", locator=0),
            message("The quarterly tax report is due in April", source="s3"),
        ]
    )
    assert judged.embed_pending() == 2
    query = judged.embedder.embed_queries(["coffee habits"])[0]
    best = judged.vector_search([HOME], query, limit=1, now=NOW)
    assert texts(judged, [best[0][0]]) == ["I drink an americano every morning"]
    assert 0.5 < best[0][1] <= 1.0  # a cosine similarity
    assert judged.text_search([HOME], "coffee habits", limit=5, now=NOW) == []


@pytest.mark.search_quality
def test_the_hybrid_ranking_finds_by_words_and_by_meaning(judged: SearchIndexPort) -> None:
    judged.put(
        [
            message("I drink an americano every morning", locator=0),
            message("The quarterly tax report is due in April", source="s3"),
            message("我每天早上喝美式咖啡", locator=2, source="s2"),
        ]
    )
    judged.embed_pending()
    by_meaning = hybrid.search(judged, "morning coffee", [HOME], now=NOW, limit=2)
    assert {hit.entry.text for hit in by_meaning} == {
        "I drink an americano every morning",
        "我每天早上喝美式咖啡",
    }
    by_words = hybrid.search(judged, "美式咖啡", [HOME, "cli:b"], now=NOW, limit=1)
    assert [hit.entry.text for hit in by_words] == ["我每天早上喝美式咖啡"]
    assert hybrid.search(judged, "coffee", ["telegram:9"], now=NOW) == []
