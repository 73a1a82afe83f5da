"""PostgreSQL text search leaves common words out of the rows it ranks only when that
cannot change the answer: with pruning, the same entries in the same order as ranking
every row that holds a word of the query, in English, Chinese and Russian, in the
search index and in the memory store (whose order is also the SQLite store's). A small
`common_rows` makes a word held by a few dozen rows count as common."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.backends.postgres.bm25 import reaching
from lore.backends.postgres.database import PostgresDatabase
from lore.backends.postgres.memories import PostgresMemoryStore
from lore.backends.postgres.search_index import PostgresSearchIndex
from lore.ports.search import Entry

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC).timestamp()
SCOPE = "telegram:family"
OTHER = "telegram:work"
COMMON_ROWS = 20

# (filler words, common words, a rare word, a word in no entry, joiner), per language.
LANGUAGES = {
    "en": (
        "car coast train window pool swim tyres weekend garden rain book song".split(),
        ["dinner", "mom"],
        "seafood",
        "volcano",
        " ",
    ),
    "zh": (
        ["周末", "开车", "花莲", "游泳", "轮胎", "火车", "窗户", "花园", "下雨", "唱歌"],
        ["晚餐", "妈妈"],
        "海鲜",
        "火山",
        "，",
    ),
    "ru": (
        "машина побережье поезд окно бассейн выходные сад дождь книга песня".split(),
        ["ужин", "мама"],
        "морепродукты",
        "вулкан",
        " ",
    ),
}


def corpus(language: str) -> list[str]:
    """120 entries: each common word in about a third of them, the rare one in ten, with
    repeats and lengths that vary, so the scores differ."""
    filler, common, rare, _, joiner = LANGUAGES[language]
    pick = random.Random(language)
    texts = []
    for n in range(120):
        words = pick.choices(filler, k=pick.randint(3, 14))
        for word in common:
            if pick.random() < 0.35:
                words += [word] * pick.randint(1, 3)
        if n % 12 == 5:
            words += [rare] * pick.randint(1, 2)
        pick.shuffle(words)
        texts.append(joiner.join(words))
    return texts


@pytest.fixture
def indexes(postgres_url: str) -> Iterator[tuple[PostgresSearchIndex, PostgresSearchIndex]]:
    """An index pruning words held by over `COMMON_ROWS` entries, and one ranking every
    matching entry, over the same table."""
    db = PostgresDatabase(postgres_url, max_size=2)
    yield (
        PostgresSearchIndex(db, common_rows=COMMON_ROWS),
        PostgresSearchIndex(db, common_rows=None),
    )
    db.close()


def fill(index: PostgresSearchIndex, language: str) -> None:
    index.put(
        [
            Entry(SCOPE, "message", "session-1", n, NOW - n, text, "ben")
            for n, text in enumerate(corpus(language))
        ]
        + [  # another conversation holding the rare word: it counts in the statistics
            Entry(OTHER, "message", "session-2", n, NOW, text, "x")
            for n, text in enumerate(corpus(language)[:30])
        ]
    )


def both(
    indexes: tuple[PostgresSearchIndex, PostgresSearchIndex], query: str, limit: int
) -> tuple[list[int], list[int]]:
    pruning, every_row = indexes
    return (
        pruning.text_search([SCOPE], query, limit=limit, now=NOW),
        every_row.text_search([SCOPE], query, limit=limit, now=NOW),
    )


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_a_common_word_beside_a_rare_one_keeps_the_ranking_of_every_row(
    indexes: tuple[PostgresSearchIndex, PostgresSearchIndex], language: str
) -> None:
    _, common, rare, _, joiner = LANGUAGES[language]
    fill(indexes[0], language)
    for query in (f"{common[0]} {rare}", f"{rare} {common[0]} {common[1]}"):
        pruned_before = indexes[0].pruned_searches
        found, expected = both(indexes, query, limit=5)
        assert len(expected) == 5, query
        assert found == expected, query
        # The rare word's entries outscore anything the common words add: only they
        # were ranked.
        assert indexes[0].pruned_searches == pruned_before + 1, query
        # More than the rare word holds: the common words' entries must be ranked too.
        found, expected = both(indexes, query, limit=30)
        assert len(expected) == 30, query
        assert found == expected, query
    assert indexes[1].pruned_searches == 0


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_a_query_of_common_words_still_finds_entries(
    indexes: tuple[PostgresSearchIndex, PostgresSearchIndex], language: str
) -> None:
    _, common, _, absent, _ = LANGUAGES[language]
    fill(indexes[0], language)
    for query in (common[0], f"{common[0]} {common[1]}", f"{common[1]} {absent}"):
        for limit in (5, 30):
            found, expected = both(indexes, query, limit=limit)
            assert len(expected) == limit, query
            assert found == expected, query


def test_a_rare_pair_of_characters_finds_only_entries_holding_the_whole_chinese_word(
    indexes: tuple[PostgresSearchIndex, PostgresSearchIndex],
) -> None:
    """海鲜晚餐 matches an entry holding all its pairs (or the word): an entry holding
    海鲜, rare, but not the rest matches only if 妈妈 does, and then ranks as it would."""
    fill(indexes[0], "zh")
    for limit in (5, 30):
        found, expected = both(indexes, "海鲜晚餐 妈妈", limit=limit)
        assert expected, limit
        assert found == expected, limit


def test_memory_search_prunes_a_common_word_and_still_ranks_as_the_sqlite_store(
    tmp_path: Path, postgres_url: str
) -> None:
    """The PostgreSQL memory store ranks only the memories of the rarer words when it
    may, and the order is still the SQLite store's (which ranks every memory), in all
    three languages."""
    local_db, pg_db = Database(tmp_path / "lore.db"), PostgresDatabase(postgres_url, max_size=2)
    local, pg = SQLiteMemoryStore(local_db), PostgresMemoryStore(pg_db, common_rows=COMMON_ROWS)
    texts = [f"{text} {n}" for n, text in enumerate(t for lang in LANGUAGES for t in corpus(lang))]
    started = datetime.fromtimestamp(NOW, UTC)
    for store in (local, pg):
        with store.batch():
            for n, text in enumerate(texts):
                moment = started + timedelta(seconds=n)
                store.remember(SCOPE, text, author="ben", via="cli", now=moment)
    later = started + timedelta(days=1)
    for _, common, rare, _, _ in LANGUAGES.values():
        for query in (f"{common[0]} {rare}", f"{rare} {common[0]} {common[1]}"):
            expected = [m.content for m in local.search(SCOPE, query, now=later, limit=5)]
            assert len(expected) == 5, query
            before = pg.pruned_searches
            found = [m.content for m in pg.search(SCOPE, query, now=later, limit=5)]
            assert found == expected, query
            assert pg.pruned_searches == before + 1, query
            # More than the rare word holds: the common word's memories are ranked too.
            expected = [m.content for m in local.search(SCOPE, query, now=later, limit=30)]
            assert len(expected) == 30, query
            assert [m.content for m in pg.search(SCOPE, query, now=later, limit=30)] == expected
    local_db.close()
    pg_db.close()


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_limit_keeps_the_ranking_of_every_row(
    indexes: tuple[PostgresSearchIndex, PostgresSearchIndex], language: str
) -> None:
    """Whichever way a search ends (the rare word's entries alone, those and the entries
    holding enough common words to reach them, or every entry), the order is the same."""
    filler, common, rare, _, _ = LANGUAGES[language]
    fill(indexes[0], language)
    queries = [f"{rare} {common[0]} {common[1]}", f"{filler[0]} {common[0]} {common[1]}"]
    for query in queries:
        for limit in range(1, 41):
            found, expected = both(indexes, query, limit=limit)
            assert found == expected, (query, limit)


def test_the_sets_of_common_words_that_can_reach_a_score_are_the_smallest_and_all_of_them() -> None:
    """Every set of terms whose bounds reach the score holds one of the sets `reaching`
    gives; no set it gives holds another, or falls short."""
    pick = random.Random(7)
    for _ in range(300):
        bounds = {f"t{i}": pick.uniform(0.1, 5.0) for i in range(pick.randint(1, 6))}
        score = pick.uniform(0.5, 12.0)
        found = reaching(bounds, score, most=1000)
        assert found is not None
        sets = [frozenset(group) for group in found]
        for size in range(1, len(bounds) + 1):
            for chosen in map(frozenset, itertools.combinations(bounds, size)):
                reaches = sum(bounds[t] for t in chosen) >= score * (1 - 1e-9)
                assert reaches == any(group <= chosen for group in sets), (bounds, score)
        assert all(not (a < b) for a in sets for b in sets)
    assert reaching({f"t{i}": 1.0 for i in range(8)}, 4.0, most=32) is None  # 70 sets
