"""The reranking seam and the final cut: a reranker changes scores, never membership;
the feature reranker favours the speaker a question names and the time it names;
session diversity lets a second session into a list one session would fill."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.search_index import SearchIndex
from lore.ports.search import Entry, Stored
from lore.search.hybrid import DEFAULT_FUSION, Fusion, search
from lore.search.rerank import Candidate, FeatureReranker, NoReranker, TimeSpan

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DAY = 86400.0


def stored(entry_id: int, speaker: str, at: float = 0.0, kind: str = "message") -> Stored:
    return Stored(entry_id, "cli:default", kind, "s1", entry_id, at, speaker, "text")


def test_no_reranker_keeps_the_fused_scores() -> None:
    candidates = [Candidate(stored(1, "Ana"), 0.5), Candidate(stored(2, "Bo"), 0.7)]

    assert NoReranker().rerank("anything", candidates) == [0.5, 0.7]


def test_the_speaker_a_question_names_is_favoured() -> None:
    candidates = [Candidate(stored(1, "Caroline"), 0.5), Candidate(stored(2, "Melanie"), 0.5)]

    scores = FeatureReranker().rerank("What did Caroline paint?", candidates)

    assert scores[0] > scores[1] == 0.5


def test_the_speaker_feature_reads_cyrillic_and_ignores_memories() -> None:
    candidates = [
        Candidate(stored(1, "Маша"), 0.5),
        Candidate(stored(2, "Маша", kind="memory"), 0.5),
    ]

    scores = FeatureReranker().rerank("что сказала маша про отпуск?", candidates)

    assert scores[0] > scores[1] == 0.5


def test_what_was_said_nearer_the_named_time_is_favoured() -> None:
    span = TimeSpan(100 * DAY, 107 * DAY)
    inside, near, far = stored(1, "", 103 * DAY), stored(2, "", 110 * DAY), stored(3, "", 400 * DAY)

    scores = FeatureReranker().rerank(
        "what happened that week", [Candidate(e, 1.0) for e in (inside, near, far)], about=span
    )

    assert scores[0] > scores[1] > scores[2] > 1.0


class Reverse:
    """A stand-in reranker: turns the order upside down."""

    name = "reverse"

    def rerank(
        self, query: str, candidates: Sequence[Candidate], *, about: TimeSpan | None = None
    ) -> list[float]:
        return [-c.score for c in candidates]


def index_with(tmp_db: Database, sessions: dict[str, list[str]]) -> SearchIndex:
    index = SearchIndex(tmp_db, embedder=None)
    for session, texts in sessions.items():
        index.put(
            Entry("cli:default", "message", session, n, NOW.timestamp() - DAY, t, "user")
            for n, t in enumerate(texts)
        )
    return index


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


def test_a_reranker_behind_the_seam_decides_the_order(db: Database) -> None:
    index = index_with(db, {"s1": ["red kite", "red kite red kite red kite"]})

    usual = search(index, "red kite", ["cli:default"], now=NOW, mode="text")
    turned = search(index, "red kite", ["cli:default"], now=NOW, mode="text", reranker=Reverse())

    assert [h.entry.id for h in turned] == [h.entry.id for h in reversed(usual)]


def test_session_diversity_lets_another_session_into_a_short_list(db: Database) -> None:
    long_session = [f"kite flying notes part {n} kite kite" for n in range(6)]
    index = index_with(db, {"s1": long_session, "s2": ["a kite story"]})
    plain = Fusion(neighbour_share=0.0, previous_share=0.0)
    diverse = Fusion(neighbour_share=0.0, previous_share=0.0, session_decay=0.5)

    without = search(index, "kite", ["cli:default"], now=NOW, mode="text", limit=3, fusion=plain)
    with_ = search(index, "kite", ["cli:default"], now=NOW, mode="text", limit=3, fusion=diverse)

    assert {h.entry.source for h in without} == {"s1"}
    assert "s2" in {h.entry.source for h in with_}


def test_the_default_settings_rerank_and_read_turns_in_context() -> None:
    assert DEFAULT_FUSION.rerank and DEFAULT_FUSION.window > 0
    assert DEFAULT_FUSION.session_decay == 1.0  # measured: diversity cost recall on LoCoMo


def worded(entry_id: int, text: str, speaker: str = "Ana") -> Stored:
    return Stored(entry_id, "cli:default", "message", "s1", entry_id, 0.0, speaker, text)


def test_a_turn_holding_more_of_the_questions_words_is_favoured() -> None:
    both = worded(1, "We painted the sunset at the lake together")
    one = worded(2, "The lake was cold this morning")
    none = worded(3, "Thanks, that means a lot")
    reranker = FeatureReranker(speaker_bonus=0.0, coverage_bonus=0.2)

    scores = reranker.rerank(
        "What has Ana painted at the lake?", [Candidate(e, 1.0) for e in (both, one, none)]
    )

    assert scores[0] > scores[1] > scores[2] == 1.0


def test_term_coverage_ignores_the_speakers_name_and_the_questions_frame() -> None:
    named = worded(1, "Ana said what she would do")  # only the name and frame words
    reranker = FeatureReranker(speaker_bonus=0.0, coverage_bonus=0.2)

    assert reranker.rerank("What would Ana do?", [Candidate(named, 1.0)]) == [1.0]


def test_term_coverage_reads_other_word_forms_in_russian_and_chinese_words() -> None:
    russian = worded(1, "Вчера я дочитала книгу про Байкал", speaker="Маша")
    chinese = worded(2, "我们上周末去了杭州看西湖", speaker="小王")
    other = worded(3, "Сегодня пасмурно", speaker="Маша")
    reranker = FeatureReranker(speaker_bonus=0.0, coverage_bonus=0.2)

    ru = reranker.rerank(
        "какие книги читала Маша?", [Candidate(russian, 1.0), Candidate(other, 1.0)]
    )
    zh = reranker.rerank("西湖", [Candidate(chinese, 1.0), Candidate(other, 1.0)])

    assert ru[0] > ru[1] == 1.0
    assert zh[0] > zh[1] == 1.0
