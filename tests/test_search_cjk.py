"""Chinese memories and archived turns, asked about in Chinese and in English.

Plain FTS5 (unicode61) sees a run of Han characters as one token, so a Chinese query
matches nothing unless it equals a whole run, and an English query can never match
Chinese text. Lore's hybrid search finds each of these in its top three.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from lore.backends.local.archive import SessionArchive
from lore.clock import FixedClock
from lore.config import load_config
from lore.llm.scripted import ScriptedProvider
from lore.messages import Message, Role
from lore.ports.sessions import SessionMeta
from lore.runtime import build
from lore.search import LoreSearch, searcher

SCOPE = "telegram:42"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
MEMORIES = [
    "我每天早上都喝一杯美式",
    "我们决定后端接口统一用 GraphQL",
    "我女儿下个月去东京交换学习",
    "医生说我的血压有点高，要少吃盐",
    "周末想去阳明山爬山",
]
TURNS: list[tuple[Role, str]] = [
    ("user", "缓存层我们要不要换成 Redis？之前的 Memcached 老是丢数据。"),
    ("assistant", "可以，Redis 支持持久化，也能做分布式锁。"),
    ("user", "那就这么定了，下周开始迁移。"),
    ("user", "我的猫最近不太吃东西，有点担心。"),
    ("assistant", "可以先观察两天，如果还是不吃建议带去看兽医。"),
    ("user", "明年春天打算搬到台南住。"),
]
# query -> the text it is looking for; none shares a word with it that FTS could match.
QUERIES = {
    "咖啡": "我每天早上都喝一杯美式",
    "coffee": "我每天早上都喝一杯美式",
    "which API technology did we choose": "我们决定后端接口统一用 GraphQL",
    "daughter studying in Japan": "我女儿下个月去东京交换学习",
    "health advice from the doctor": "医生说我的血压有点高，要少吃盐",
    "hiking": "周末想去阳明山爬山",
    "which cache database": "缓存层我们要不要换成 Redis？之前的 Memcached 老是丢数据。",
    "宠物生病": "我的猫最近不太吃东西，有点担心。",
    # ("pet is sick" alone sits within 0.001 of the relevance floor: kept or not by the
    # last digits of the vectors, so not a test of finding it.)
    "my pet is sick": "我的猫最近不太吃东西，有点担心。",
}


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoreSearch]:
    home = tmp_path_factory.mktemp("cjk-home")
    config = load_config(env={"LORE_HOME": str(home)}, flags={"model": "scripted"})
    lore = build(config, provider=ScriptedProvider(), clock=FixedClock(NOW))
    for text in MEMORIES:
        lore.memory.remember(SCOPE, text, author="王", via="cli", now=NOW)
    archive = SessionArchive(config.sessions_dir, config.home)
    stamp = "2026-11-20T10:30:00+00:00"
    messages: list[Message] = [{"role": r, "content": c, "timestamp": stamp} for r, c in TURNS]
    entry = archive.write_transcript(
        SessionMeta("9f3c2a1b" * 4, SCOPE, stamp, stamp),
        messages,
        ended_at=datetime(2026, 11, 20, 11, tzinfo=UTC),
        zone=UTC,
        slug="cache",
        reason="new",
    )
    archive.append_index(entry)
    found = searcher(lore)
    found.refresh(files=True)
    found.embed_pending()
    yield found
    lore.db.close()


def plain_fts(query: str) -> list[str]:
    """What a raw-FTS5 keyword search returns over the same texts."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (body)")
    db.executemany(
        "INSERT INTO t (body) VALUES (?)", [(t,) for t in MEMORIES + [c for _, c in TURNS]]
    )
    match = " OR ".join(f'"{word}"' for word in query.split())
    return [row[0] for row in db.execute("SELECT body FROM t WHERE t MATCH ? LIMIT 3", (match,))]


@pytest.mark.parametrize("query", list(QUERIES))
def test_hybrid_search_finds_it_in_the_top_three(search: LoreSearch, query: str) -> None:
    hits = search.search(query, SCOPE, limit=3, now=NOW)

    assert QUERIES[query] in [hit.entry.text for hit in hits]


@pytest.mark.parametrize("query", list(QUERIES))
def test_plain_fts_finds_none_of_them(query: str) -> None:
    assert QUERIES[query] not in plain_fts(query)


def test_text_search_alone_misses_every_english_query(search: LoreSearch) -> None:
    english = [q for q in QUERIES if q.isascii()]
    for query in english:
        hits = search.search(query, SCOPE, limit=3, now=NOW, mode="text")
        assert QUERIES[query] not in [hit.entry.text for hit in hits]


def test_a_chinese_word_inside_a_sentence_is_found_by_text(search: LoreSearch) -> None:
    # Bigrams: 爬山 inside 周末想去阳明山爬山, which unicode61 keeps as one token.
    hits = search.search("爬山", SCOPE, limit=1, now=NOW, mode="text")

    assert [hit.entry.text for hit in hits] == ["周末想去阳明山爬山"]
    assert plain_fts("爬山") == []


def test_results_carry_their_source(search: LoreSearch) -> None:
    memory = search.search("美式", SCOPE, limit=1, now=NOW, mode="text")[0]
    turn = search.search("分布式锁", SCOPE, limit=1, now=NOW, mode="text")[0]

    assert memory.source == {"kind": "memory", "memory_id": 1}
    assert turn.source == {"kind": "message", "session_id": "9f3c2a1b" * 4, "message_index": 1}
