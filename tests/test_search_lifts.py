"""The session lift and the summary discount: a session that matches a query as a whole
lifts its turns, a memory is lifted as a whole story, and a closed session's summary
ranks below the transcript turn that says the same thing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.search_index import SearchIndex
from lore.ports.search import Entry, Stored
from lore.search.hybrid import DEFAULT_FUSION, Fusion, search
from lore.search.lifts import is_summary, lift_sessions, weigh_summaries

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = "cli:default"


def message(entry_id: int, session: str) -> Stored:
    return Stored(entry_id, SCOPE, "message", session, entry_id, 0.0, "Ana", "text")


def note(entry_id: int, path: str) -> Stored:
    return Stored(entry_id, SCOPE, "note", path, 1, 0.0, "", "text")


def test_a_session_that_matches_as_a_whole_lifts_its_weaker_turns() -> None:
    entries = {1: message(1, "trip"), 2: message(2, "trip"), 3: message(3, "other")}
    scores = {1: 1.0, 2: 1.0, 3: 1.0}

    lift_sessions(scores, entries, 0.3)

    assert scores[1] == scores[2] == pytest.approx(1.3)
    assert scores[3] == pytest.approx(1.15)  # half the best session's mass


def test_a_memory_gets_the_full_session_lift() -> None:
    memory = Stored(9, SCOPE, "memory", "", 9, 0.0, "", "Ana likes tea")
    entries = {1: message(1, "long"), 2: message(2, "long"), 3: message(3, "long"), 9: memory}
    scores = {1: 1.0, 2: 1.0, 3: 1.0, 9: 1.0}

    lift_sessions(scores, entries, 0.3)

    assert scores[9] == pytest.approx(scores[1]) == pytest.approx(1.3)


def test_only_closed_session_summaries_count_as_summaries() -> None:
    assert is_summary(note(1, "memory/2026-11-20-1100-backend-choice.md"))
    assert is_summary(note(1, "memory/2026-11-20-1100-session-raw.md"))
    assert not is_summary(note(1, "memory/2026-11-20.md"))  # a daily note
    assert not is_summary(note(1, "MEMORY.md"))
    assert not is_summary(message(1, "memory/2026-11-20-1100-x.md"))


def test_summaries_are_weighed_down_and_nothing_else() -> None:
    entries = {1: note(1, "memory/2026-11-20-1100-trip.md"), 2: note(2, "memory/2026-11-20.md")}
    scores = {1: 1.0, 2: 1.0}

    weigh_summaries(scores, entries, 0.7)

    assert scores == {1: pytest.approx(0.7), 2: 1.0}


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    db = Database(tmp_path / "lore.db")
    yield SearchIndex(db, embedder=None)
    db.close()


def test_the_transcript_turn_ranks_above_its_sessions_summary(index: SearchIndex) -> None:
    at = NOW.timestamp() - 86400.0
    index.put(
        [
            Entry(SCOPE, "note", "memory/2026-11-29-1000-db.md", 3, at, "Postgres chosen."),
            Entry(SCOPE, "message", "s1", 0, at, "So in the end we go with Postgres", "user"),
        ]
    )
    even = Fusion(summary_weight=1.0, neighbour_share=0.0, previous_share=0.0)

    usual = search(index, "Postgres", [SCOPE], now=NOW, mode="text")
    unweighted = search(index, "Postgres", [SCOPE], now=NOW, mode="text", fusion=even)

    assert [h.entry.kind for h in unweighted] == ["note", "message"]  # the shorter text
    assert [h.entry.kind for h in usual] == ["message", "note"]
    assert DEFAULT_FUSION.summary_weight < 1.0
