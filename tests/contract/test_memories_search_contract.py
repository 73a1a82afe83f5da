"""What every MemoryStore's search finds, on every backend: Chinese words of any length,
keywords, English stemmed and without stopwords, Russian inflections, Japanese and Korean, never
another scope, and queries that look like search syntax. (The rest of the contract is
test_memories_contract.py.)"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
OTHER = "telegram:42"


@pytest.fixture
def store(backend: Backend) -> Any:
    return backend.memories


def note(store: Any, content: str, scope: str = HOME, **kw: Any) -> int:
    memory, _ = store.remember(scope, content, author="john", via="tool", now=NOW, **kw)
    return int(memory.id)


def found(store: Any, query: str, scope: str = HOME) -> list[str]:
    return [m.content for m in store.search(scope, query, now=NOW)]


COFFEE = "我每天早上喝美式咖啡"
MEETING = "我明天下午三点开会"
SHANGHAI = "我老家在上海"
SEASIDE = "周末早上海边跑步"
HUALIEN = "John lives in Hualien and drinks two coffees a day"
RUSSIAN = "Я люблю кофе по утрам"
MOSCOW = "Мама живёт в Москве"
JAPANESE = "私は毎朝コーヒーを飲みます"
KOREAN = "저는 아침마다 커피를 마셔요"


def needs_real_search(backend_name: str) -> None:
    if backend_name == "fake":
        pytest.skip("the in-memory backend has no word segmentation, stemming or ranking")


@pytest.fixture
def searchable(store: Any) -> Any:
    for text in (MEETING, SHANGHAI, SEASIDE, HUALIEN, RUSSIAN, MOSCOW, JAPANESE, KOREAN):
        note(store, text)
    note(store, COFFEE, keywords=["提神", "caffeine"])
    note(store, "我也喝美式咖啡", scope=OTHER)
    return store


@pytest.mark.parametrize("query", ["咖啡", "美式咖啡", "美式", "早上喝", "咖", "我每天喝什么咖啡"])
def test_chinese_words_of_any_length_find_the_memory(
    searchable: Any, query: str, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, query)[0] == COFFEE


def test_a_whole_chinese_word_ranks_above_characters_straddling_two(
    searchable: Any, backend_name: str
) -> None:
    needs_real_search(backend_name)
    # 早上海边 holds the characters 上海 but the words 早上 and 海边.
    assert found(searchable, "上海")[:2] == [SHANGHAI, SEASIDE]


def test_a_two_character_chinese_word_finds_only_what_contains_it(searchable: Any) -> None:
    assert found(searchable, "开会") == [MEETING]
    assert found(searchable, "茶") == []


def test_keywords_find_a_memory_by_words_it_does_not_contain(searchable: Any) -> None:
    assert found(searchable, "提神") == [COFFEE]
    assert found(searchable, "caffeine") == [COFFEE]


@pytest.mark.parametrize("query", ["coffee", "Coffees", "HUALIEN", "drinking", "ｃｏｆｆｅｅ"])
def test_english_is_case_insensitive_and_stemmed(
    searchable: Any, query: str, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, query) == [HUALIEN]


def test_english_stopwords_do_not_match_everything(searchable: Any) -> None:
    assert found(searchable, "where does the John live") == [HUALIEN]


@pytest.mark.parametrize(
    ("query", "text"),
    [("кофе", RUSSIAN), ("Москва", MOSCOW), ("мама живет", MOSCOW), ("КОФЕ", RUSSIAN)],
)
def test_russian_words_find_their_inflected_forms(
    searchable: Any, query: str, text: str, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, query)[0] == text


@pytest.mark.parametrize(
    ("query", "text"),
    [("コーヒー", JAPANESE), ("毎朝", JAPANESE), ("커피", KOREAN), ("아침", KOREAN)],
)
def test_japanese_and_korean_words_are_found(searchable: Any, query: str, text: str) -> None:
    assert found(searchable, query) == [text]


def test_search_never_returns_another_scopes_memory(searchable: Any) -> None:
    assert [m.scope for m in searchable.search(OTHER, "咖啡", now=NOW)] == [OTHER]
    assert "我也喝美式咖啡" not in found(searchable, "美式咖啡")


@pytest.mark.parametrize(
    "query",
    ['coffee" OR NOT (', "*", "NEAR(a b)", "AND", "-", "。！", "", "a\u19b1b", "it's", "\\"],
)
def test_queries_with_search_syntax_or_no_words_are_safe(searchable: Any, query: str) -> None:
    searchable.search(HOME, query, now=NOW)
