"""Memories and the index move together: forgetting erases from text and vector search at
once, in the same transaction, whoever forgets and whether or not anyone calls us."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.backends.local.database import Database
from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from lore.search import LoreSearch, searcher
from lore.search.hybrid import Mode

SCOPE = "telegram:7"


@pytest.fixture
def runtime(config: Config, clock: FixedClock) -> Iterator[Runtime]:
    lore = build(config, provider=ScriptedProvider(), clock=clock)
    yield lore
    lore.db.close()


def remember(lore: Runtime, text: str) -> int:
    memory, _ = lore.memory.remember(SCOPE, text, author="ann", via="cli", now=lore.clock.now())
    return memory.id


def found(search: LoreSearch, query: str, mode: Mode = "hybrid") -> list[str]:
    return [hit.entry.text for hit in search.search(query, SCOPE, mode=mode)]


def vector_ids(search: LoreSearch, query: str) -> list[int]:
    index = search.index
    vector = index.embedder.embed_queries([query])[0]
    return [i for i, _ in index.vector_search([SCOPE], vector, limit=10, now=2e9)]


@pytest.mark.search_quality
def test_a_new_memory_is_searchable_by_text_before_it_has_a_vector(runtime: Runtime) -> None:
    search = searcher(runtime)
    remember(runtime, "Ann's passport expires in March 2027")

    assert found(search, "passport", mode="text") == ["Ann's passport expires in March 2027"]
    assert search.index.pending_vectors() == 1
    search.embed_pending()
    assert found(search, "travel documents") == ["Ann's passport expires in March 2027"]


def test_forgetting_a_memory_removes_it_from_text_and_vector_search_at_once(
    runtime: Runtime,
) -> None:
    search = searcher(runtime)
    doomed = remember(runtime, "Ann is allergic to penicillin")
    remember(runtime, "Ann likes hiking on weekends")
    search.refresh()
    search.embed_pending()
    assert len(vector_ids(search, "medicine allergy")) == 2  # the vector cache is warm

    runtime.memory.forget(SCOPE, doomed, by="ann", via="cli", now=runtime.clock.now())

    assert found(search, "penicillin", mode="text") == []
    assert "Ann is allergic to penicillin" not in found(search, "medicine allergy")
    assert len(vector_ids(search, "medicine allergy")) == 1
    rows = runtime.db.conn.execute("SELECT count(*) FROM search_vectors").fetchone()[0]
    assert rows == 1


def test_forgetting_erases_the_terms_from_the_index_files(runtime: Runtime) -> None:
    search = searcher(runtime)
    doomed = remember(runtime, "The safe code hint is zyxwvut")
    search.refresh()
    runtime.memory.forget(SCOPE, doomed, by="ann", via="cli", now=runtime.clock.now())

    conn = runtime.db.conn
    conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, search_fts, 'row')")
    assert conn.execute("SELECT count(*) FROM temp.terms WHERE term = 'zyxwvut'").fetchone()[0] == 0
    runtime.db.checkpoint()
    assert b"zyxwvut" not in runtime.config.db_path.read_bytes()


def test_a_superseded_memory_leaves_the_index_and_its_new_version_enters(runtime: Runtime) -> None:
    search = searcher(runtime)
    old = remember(runtime, "Ann lives in Taipei")
    search.refresh()
    runtime.memory.supersede(
        SCOPE, old, "Ann lives in Hualien", author="ann", via="cli", now=runtime.clock.now()
    )

    assert found(search, "lives", mode="text") == ["Ann lives in Hualien"]


def test_a_memory_written_by_another_process_is_found_at_the_next_search(
    runtime: Runtime,
) -> None:
    search = searcher(runtime)
    search.refresh()
    other = Database(runtime.config.db_path)  # another process's connection
    try:
        from lore.backends.local.memories import SQLiteMemoryStore

        SQLiteMemoryStore(other).remember(
            SCOPE, "Ann's dentist is Dr. Lin", author="ann", via="cli", now=runtime.clock.now()
        )
    finally:
        other.close()

    assert found(search, "dentist", mode="text") == ["Ann's dentist is Dr. Lin"]


def test_memories_are_indexed_only_in_their_own_scope(runtime: Runtime) -> None:
    search = searcher(runtime)
    remember(runtime, "The family wifi router is in the hallway")

    assert search.search("wifi router", "line:group:other", mode="text") == []
