"""Full-text search over memories in Chinese, English, Russian, Japanese and Korean."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.ports.memories import MemoryStore
from lore.text import display_width, index_terms, match_expression, stem_russian

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"

COFFEE = "我每天早上喝美式咖啡"
MEETING = "我明天下午三点开会"
SHANGHAI = "我老家在上海"
SEASIDE = "周末早上海边跑步"
HUALIEN = "John lives in Hualien and drinks two coffees a day"
RUSSIAN = "Я люблю кофе по утрам"
MOSCOW = "Мама живёт в Москве"
JAPANESE = "私は毎朝コーヒーを飲みます"
KOREAN = "저는 아침마다 커피를 마셔요"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    db = Database(tmp_path / "lore.db")
    memories = SQLiteMemoryStore(db)
    for text, keywords in [
        (COFFEE, ["提神", "caffeine"]),
        (MEETING, []),
        (SHANGHAI, []),
        (SEASIDE, []),
        (HUALIEN, []),
        (RUSSIAN, []),
        (MOSCOW, []),
        (JAPANESE, []),
        (KOREAN, []),
    ]:
        memories.remember(HOME, text, keywords=keywords, author="john", via="tool", now=NOW)
    memories.remember("telegram:42", "我也喝美式咖啡", author="eve", via="tool", now=NOW)
    yield memories
    db.close()


def found(store: MemoryStore, query: str) -> list[str]:
    return [m.content for m in store.search(HOME, query, now=NOW)]


@pytest.mark.parametrize("query", ["咖啡", "美式咖啡", "美式", "早上喝", "咖"])
def test_chinese_words_of_any_length_find_the_memory(store: MemoryStore, query: str) -> None:
    assert COFFEE in found(store, query)


def test_a_two_character_chinese_word_finds_only_what_contains_it(store: MemoryStore) -> None:
    assert found(store, "开会") == [MEETING]
    assert found(store, "茶") == []


def test_keywords_find_a_memory_by_words_it_does_not_contain(store: MemoryStore) -> None:
    assert found(store, "提神") == [COFFEE]
    assert found(store, "caffeine") == [COFFEE]


def test_a_whole_word_ranks_above_characters_that_straddle_two_words(store: MemoryStore) -> None:
    # 早上海边 contains the characters 上海 but the words 早上 and 海边.
    assert found(store, "上海")[:2] == [SHANGHAI, SEASIDE]


def test_a_chinese_sentence_as_query_finds_by_its_words(store: MemoryStore) -> None:
    assert found(store, "我每天喝什么咖啡")[0] == COFFEE


@pytest.mark.parametrize("query", ["coffee", "Coffees", "HUALIEN", "drinking", "ｃｏｆｆｅｅ"])
def test_english_is_case_insensitive_and_stemmed(store: MemoryStore, query: str) -> None:
    assert found(store, query) == [HUALIEN]


def test_english_stopwords_do_not_match_everything(store: MemoryStore) -> None:
    assert found(store, "where does the John live") == [HUALIEN]


@pytest.mark.parametrize(
    ("query", "text"),
    [("кофе", RUSSIAN), ("Москва", MOSCOW), ("мама живет", MOSCOW), ("КОФЕ", RUSSIAN)],
)
def test_russian_words_find_their_inflected_forms(
    store: MemoryStore, query: str, text: str
) -> None:
    assert found(store, query)[0] == text


@pytest.mark.parametrize(
    ("query", "text"),
    [("コーヒー", JAPANESE), ("毎朝", JAPANESE), ("커피", KOREAN), ("아침", KOREAN)],
)
def test_japanese_and_korean_words_are_found(store: MemoryStore, query: str, text: str) -> None:
    assert found(store, query) == [text]


def test_search_never_returns_another_scopes_memory(store: MemoryStore) -> None:
    assert [m.scope for m in store.search("telegram:42", "咖啡", now=NOW)] == ["telegram:42"]
    assert "我也喝美式咖啡" not in found(store, "美式咖啡")


@pytest.mark.parametrize(
    # U+19B1 is a letter to Python but a separator to SQLite's Unicode 6.1 tables.
    "query",
    ['coffee" OR NOT (', "*", "NEAR(a b)", "AND", "-", "。！", "", "a\u19b1b"],
)
def test_queries_with_search_syntax_or_no_words_are_safe(store: MemoryStore, query: str) -> None:
    store.search(HOME, query, now=NOW)


def test_a_forgotten_memory_is_no_longer_found(store: MemoryStore) -> None:
    (hit,) = store.search(HOME, "开会", now=NOW)
    store.forget(HOME, hit.id, by="john", via="tool", now=NOW)
    assert found(store, "开会") == []


def test_index_terms_hold_words_unigrams_and_bigrams() -> None:
    terms = index_terms("喝美式咖啡 and TEA")
    assert {"美式", "咖啡", "and", "tea"} <= set(terms.words.split())
    assert {"喝", "咖", "喝美", "式咖", "咖啡"} <= set(terms.grams.split())


def test_a_query_needs_no_jieba_and_quotes_every_term() -> None:
    assert match_expression("美式咖啡") == (
        '({grams keywords}: ("美式" AND "式咖" AND "咖啡") OR words: "美式咖啡")'
    )
    assert match_expression('x"y') == '{words keywords}: "x" OR {words keywords}: "y"'
    assert match_expression("?!") is None


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("москве", "москв"),
        ("москва", "москв"),
        ("книги", "книг"),
        ("говорил", "говор"),
        ("возможность", "возможн"),
        ("важнейший", "важн"),
        ("кофе", "коф"),
    ],
)
def test_russian_stems_follow_snowball(word: str, stem: str) -> None:
    assert stem_russian(word) == stem


def test_display_width_counts_wide_characters_twice() -> None:
    assert display_width("abc") == 3
    assert display_width("咖啡") == 4
    assert display_width("コーヒー커피") == 12
