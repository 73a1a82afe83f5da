"""Common words score only the rows rarer words find, when that cannot change the ranking:
the same ids in the same order as ranking every matching row, in English, Chinese and
Russian, with the scope as a MATCH term or as a join."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lore.backends.local.search_index as store_module
from lore.backends.local import bm25
from lore.backends.local.database import Database
from lore.backends.local.search_index import SearchIndex
from lore.ports.search import Entry

SCOPE = "telegram:family"
OTHER = "cli:default"
NOW = 1_800_000_000.0

NAMES = "Anna Ben Chloe David Emma Grandma".split()
COMMON = "says her the trip family weekend".split()
RARE = "dentist lasagna kayak passport violin tortoise marathon pottery".split()
ZH = ["妈妈买了生日蛋糕", "奶奶去医院看牙医", "爸爸在花莲订了火车票", "小明学会了钢琴"]
RU = [
    "Маша купила билеты на поезд",
    "Анна забронировала приём у стоматолога",
    "Борис починил велосипед",
]


FILLER = "on at with from garden lake station market bread tea rain snow".split()


def corpus(count: int, seed: int = 5) -> list[str]:
    """Rows where common words are common enough to need pruning but rare enough that a
    row holding several of them can outrank a row holding one rare word."""
    rng = random.Random(seed)
    texts = []
    for n in range(count):
        words = rng.sample(NAMES, 1) + rng.sample(FILLER, rng.randint(0, 6))
        words += [w for w in COMMON if rng.random() < 0.12]
        if rng.random() < 0.1:
            words.append(rng.choice(RARE))
        if n % 7 == 0:
            words.append(rng.choice(ZH))
        if n % 11 == 0:
            words.append(rng.choice(RU))
        rng.shuffle(words)
        texts.append(" ".join(words))
    return texts


QUERIES = [
    "What does Anna say about her dentist?",
    "the family weekend trip with Grandma",
    "her kayak and the violin",
    "Emma says the tortoise ran a marathon",
    "妈妈的生日蛋糕",
    "Анна и стоматолог",
    "her family says the weekend",  # common words only
]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    db = Database(tmp_path / "lore.db")
    found = SearchIndex(db)
    texts = corpus(1500)
    found.put(
        [
            Entry(SCOPE if n % 5 else OTHER, "message", f"s{n // 50}", n % 50, NOW - n, t, "")
            for n, t in enumerate(texts)
        ]
    )
    yield found
    db.close()


def everything_ranked(
    index: SearchIndex, query: str, monkeypatch: pytest.MonkeyPatch, limit: int
) -> list[int]:
    with monkeypatch.context() as patch:
        patch.setattr(store_module, "_COMMON_ROWS", 10**9)
        return index.text_search([SCOPE], query, limit=limit, now=NOW)


@pytest.mark.parametrize("share", [0.0, 1.01])  # the scope as a join; as a MATCH term
@pytest.mark.parametrize("query", QUERIES)
def test_leaving_common_words_to_score_rare_rows_keeps_the_same_ranking(
    index: SearchIndex, query: str, share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "_TAG_SHARE", share)
    for limit in (5, 30, 60):
        expected = everything_ranked(index, query, monkeypatch, limit)
        monkeypatch.setattr(store_module, "_COMMON_ROWS", 100)
        assert index.text_search([SCOPE], query, limit=limit, now=NOW) == expected
        assert expected


def test_a_query_with_rare_words_ranks_far_fewer_rows(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The split is taken (not the full ranking) when the rare rows' best are enough."""
    monkeypatch.setattr(store_module, "_COMMON_ROWS", 100)
    taken = []
    pruned = SearchIndex._pruned

    def spy(self: SearchIndex, *args: Any, **kwargs: Any) -> list[int] | None:
        found = pruned(self, *args, **kwargs)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(SearchIndex, "_pruned", spy)
    index.text_search([SCOPE], "What does Anna say about her dentist?", limit=5, now=NOW)
    assert taken == [True]


def test_counts_of_words_are_forgotten_when_entries_are_removed(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "_COMMON_ROWS", 100)
    index.text_search([SCOPE], "her dentist", limit=5, now=NOW)
    assert index._frequencies
    index.remove_source("message", "s0")
    index.text_search([SCOPE], "kayak", limit=5, now=NOW)
    assert all("her" not in unit for unit in index._frequencies)
    query = "What does Anna say about her dentist?"
    expected = everything_ranked(index, query, monkeypatch, 30)
    assert index.text_search([SCOPE], query, limit=30, now=NOW) == expected


# -- the bound itself ----------------------------------------------------------------------


def test_units_split_at_the_top_level_only() -> None:
    expression = (
        '{words keywords}: "anna" OR ({grams keywords}: ("生日" AND "日蛋") OR words:'
        ' "生日蛋糕") OR {words keywords}: "say ""or"" OR x"'
    )
    assert bm25.units(expression) == [
        '{words keywords}: "anna"',
        '({grams keywords}: ("生日" AND "日蛋") OR words: "生日蛋糕")',
        '{words keywords}: "say ""or"" OR x"',
    ]
    assert bm25.is_one_phrase('{words keywords}: "anna"')
    assert not bm25.is_one_phrase('({grams keywords}: ("生日" AND "日蛋") OR words: "生日蛋糕")')


@pytest.mark.parametrize("word", ["her", "says", "dentist", "anna"])
def test_no_row_scores_more_for_one_word_than_its_bound(word: str) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (a, b)")
    texts = corpus(400, seed=9)
    db.executemany("INSERT INTO t (a, b) VALUES (?, ?)", [(t, t[:12] * 3) for t in texts])
    db.execute("INSERT INTO t (a, b) VALUES (?, ?)", (f"{word} {word} {word}", word))
    (holding,) = db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (word,)).fetchone()
    scores = [
        -float(r[0])
        for r in db.execute("SELECT bm25(t, 2.0, 0.75) FROM t WHERE t MATCH ?", (word,))
    ]
    # bm25's own weights multiply a term's count, never past the bound's saturation
    assert max(scores) <= bm25.term_bound(401, holding)
    assert max(scores) > 0.5 * bm25.term_bound(401, holding)  # and the bound is not loose


def test_only_the_commonest_words_whose_bounds_fit_under_a_score_are_dropped() -> None:
    bounds = {"a": 1.0, "b": 2.0, "c": 5.0}
    assert bm25.droppable(["c", "a", "b"], bounds, 3.5) == ["a", "b"]
    assert bm25.droppable(["c", "a", "b"], bounds, 3.0) == ["a"]
    assert bm25.droppable(["c"], bounds, 1.0) == []
