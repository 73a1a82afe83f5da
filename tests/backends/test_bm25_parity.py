"""PostgreSQL ranks text as SQLite's FTS5 does: the same memories (or index entries),
the same query, the same order, in English, Chinese and Russian, with repeated words,
keywords and neighbouring text (matched at a lower weight) and entries of every length.
Another conversation's rows share the table, as in a real home: FTS5 counts every
conversation in its statistics (a word common elsewhere weighs less here too), and so
does PostgreSQL. The orders must be equal, not merely alike."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.backends.local.search_index import SearchIndex
from lore.backends.postgres.database import PostgresDatabase
from lore.backends.postgres.memories import PostgresMemoryStore
from lore.backends.postgres.search_index import PostgresSearchIndex
from lore.ports.search import Entry

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = "telegram:family"
OTHER = "telegram:work"
# In the other conversation: words of the queries, common there.
ELSEWHERE = ["dinner with the team", "seafood order for the office", "晚餐 会议", "ужин с командой"]

# (text, keywords): lengths, repeats and keywords differ, so f, |D| and idf all matter.
ENGLISH = [
    ("Grandma's birthday dinner is at the Hualien seafood place", ["birthday", "dinner"]),
    ("We drove to Hualien for the weekend and ate seafood twice, seafood again", []),
    ("Ben booked the dinner table for Saturday", ["restaurant"]),
    ("Seafood makes Anna ill; order her the vegetarian dinner", ["allergy", "seafood"]),
    ("The car needs new tyres before the Hualien trip", []),
    ("Dinner dinner dinner: Mom wants every birthday at home this year", []),
    ("Anna is learning to swim at the community pool on Sundays", ["swimming"]),
    ("Ben prefers window seats on trains and long drives along the coast", []),
]
CHINESE = [
    ("奶奶的生日晚餐在花莲的海鲜餐厅", ["生日"]),
    ("周末我们开车去花莲，吃了两次海鲜", []),
    ("小明订了星期六的晚餐", ["餐厅"]),
    ("安娜对海鲜过敏，给她点素食晚餐", ["过敏", "海鲜"]),
    ("去花莲之前车要换新轮胎", []),
    ("晚餐晚餐晚餐：妈妈今年想在家过每个生日", []),
    ("安娜周日在社区游泳池学游泳", ["游泳"]),
]
RUSSIAN = [
    ("Бабушкин день рождения отмечаем ужином в рыбном ресторане в Хуаляне", ["праздник"]),
    ("На выходных мы ездили в Хуалянь и дважды ели морепродукты", []),
    ("Бен заказал столик на ужин в субботу", ["ресторан"]),
    ("У Анны аллергия на морепродукты, закажите ей вегетарианский ужин", ["аллергия"]),
    ("Перед поездкой в Хуалянь машине нужны новые шины", []),
    ("Ужин, ужин, ужин: мама хочет каждый день рождения дома", []),
    ("Анна учится плавать в бассейне по воскресеньям", ["плавание"]),
]
CASES = [
    pytest.param(ENGLISH, ["seafood dinner", "Hualien birthday", "dinner", "Anna swim"], id="en"),
    pytest.param(CHINESE, ["海鲜 晚餐", "花莲 生日", "晚餐", "安娜 游泳", "生日晚餐"], id="zh"),
    pytest.param(RUSSIAN, ["ужин морепродукты", "Хуалянь день рождения", "ужин"], id="ru"),
]


@pytest.fixture
def databases(tmp_path: Path, postgres_url: str) -> Iterator[tuple[Database, PostgresDatabase]]:
    local = Database(tmp_path / "lore.db")
    pg = PostgresDatabase(postgres_url, max_size=2)
    yield local, pg
    local.close()
    pg.close()


def remember_all(store: Any, items: list[tuple[str, list[str]]]) -> dict[int, str]:
    for n, text in enumerate(ELSEWHERE * 3):
        store.remember(OTHER, f"{text} {n}", author="x", via="cli", now=NOW)
    ids = {}
    for n, (text, keywords) in enumerate(items):
        memory, _ = store.remember(
            SCOPE, text, author="ben", via="cli", keywords=keywords, now=NOW + timedelta(minutes=n)
        )
        ids[memory.id] = text
    return ids


@pytest.mark.parametrize(("items", "queries"), CASES)
def test_memory_search_ranks_as_the_sqlite_store(
    databases: tuple[Database, PostgresDatabase], items: Any, queries: list[str]
) -> None:
    local, pg = SQLiteMemoryStore(databases[0]), PostgresMemoryStore(databases[1])
    remember_all(local, items)
    remember_all(pg, items)
    for query in queries:
        expected = [m.content for m in local.search(SCOPE, query, now=NOW)]
        assert expected, query
        assert [m.content for m in pg.search(SCOPE, query, now=NOW)] == expected, query


def entries(items: list[tuple[str, list[str]]]) -> list[Entry]:
    """Chat turns of one session, each matching its neighbours at the lower weight, as
    archived messages do."""
    texts = [text for text, _ in items]
    return [
        Entry(
            SCOPE,
            "message",
            "session-1",
            n,
            NOW.timestamp() + n,
            text,
            "ben",
            extra="\n".join([*keywords, *texts[max(0, n - 1) : n], *texts[n + 1 : n + 2]]),
        )
        for n, (text, keywords) in enumerate(items)
    ]


@pytest.mark.parametrize(("items", "queries"), CASES)
def test_index_text_search_ranks_as_sqlite_fts5(
    databases: tuple[Database, PostgresDatabase], items: Any, queries: list[str]
) -> None:
    local, pg = SearchIndex(databases[0]), PostgresSearchIndex(databases[1])
    elsewhere = [
        Entry(OTHER, "message", "session-2", n, NOW.timestamp(), f"{text} {n}", "x")
        for n, text in enumerate(ELSEWHERE * 3)
    ]
    local.put(elsewhere)
    pg.put(elsewhere)
    local_ids, pg_ids = local.put(entries(items)), pg.put(entries(items))
    for query in queries:
        now = NOW.timestamp() + 60
        ranked = local.text_search([SCOPE], query, limit=20, now=now)
        expected = [local_ids.index(i) for i in ranked]
        assert expected, query
        found = [pg_ids.index(i) for i in pg.text_search([SCOPE], query, limit=20, now=now)]
        assert found == expected, query
