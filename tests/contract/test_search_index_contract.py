"""What every search index does: entries found by text as soon as they are written and by
meaning once embedded, scopes applied inside each query, entries replaced by their place
(kind, source, locator) and by source, expiry, source records and stats."""

from __future__ import annotations

import pytest

from lore.ports.search import Entry, SearchIndexPort, SourceRecord
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
    [new] = index.put([message("the second draft", locator=3)])
    assert index.fetch([old]) == {}
    assert texts(index, [new]) == ["the second draft"]
    assert index.text_search([HOME], "first", limit=5, now=NOW) == []
    assert index.stats().entries["message"] == 1


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
