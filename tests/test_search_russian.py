"""Russian memories and archived turns, asked about in Russian (other word forms) and in
English: Lore's hybrid search finds each in its top three, and a Russian time phrase
narrows the search to when it was said."""

from __future__ import annotations

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
from lore.search.timespan import time_range

SCOPE = "telegram:7"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
MEMORIES = [
    "Каждое утро я пью чёрный кофе без сахара",
    "Дочь Маша учится в Казани на врача",
    "У меня аллергия на арахис",
    "Мы решили делать бэкенд на Go, а не на Python",
]
TURNS: list[tuple[str, Role, str]] = [
    ("2026-11-24T10:00:00+00:00", "user", "Собака опять не ест корм, я волнуюсь."),
    ("2026-11-24T10:00:00+00:00", "assistant", "Понаблюдайте день-два; если не ест, к ветеринару."),
    ("2026-10-02T10:00:00+00:00", "user", "Летом поедем на Байкал, уже купили билеты."),
]
# query -> the text it is looking for
QUERIES = {
    "кофе по утрам": MEMORIES[0],
    "morning coffee": MEMORIES[0],
    "где учится дочь": MEMORIES[1],
    "daughter studies medicine": MEMORIES[1],
    "аллергии": MEMORIES[2],
    "which programming language for the backend": MEMORIES[3],
    "собака заболела": TURNS[0][2],
    "dog is not eating": TURNS[0][2],
    "поездка на озеро": TURNS[2][2],
}


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoreSearch]:
    home = tmp_path_factory.mktemp("ru-home")
    config = load_config(env={"LORE_HOME": str(home)}, flags={"model": "scripted"})
    lore = build(config, provider=ScriptedProvider(), clock=FixedClock(NOW))
    for text in MEMORIES:
        lore.memory.remember(SCOPE, text, author="Иван", via="cli", now=NOW)
    archive = SessionArchive(config.sessions_dir, config.home)
    for number, stamp in enumerate(dict.fromkeys(t[0] for t in TURNS)):
        messages: list[Message] = [
            {"role": r, "content": c, "timestamp": s} for s, r, c in TURNS if s == stamp
        ]
        start = datetime.fromisoformat(stamp)
        entry = archive.write_transcript(
            SessionMeta(f"{number}" * 32, SCOPE, stamp, stamp),
            messages,
            ended_at=start.replace(hour=11),
            zone=UTC,
            slug=f"ru-{number}",
            reason="new",
        )
        archive.append_index(entry)
    found = searcher(lore)
    found.refresh(files=True)
    found.embed_pending()
    yield found
    lore.db.close()


@pytest.mark.parametrize("query", list(QUERIES))
def test_hybrid_search_finds_it_in_the_top_three(search: LoreSearch, query: str) -> None:
    hits = search.search(query, SCOPE, limit=3, now=NOW)

    assert QUERIES[query] in [hit.entry.text for hit in hits]


def test_a_russian_time_phrase_keeps_what_was_said_then(search: LoreSearch) -> None:
    after, before, span = time_range(
        when="на прошлой неделе", after=None, before=None, now=NOW, zone=UTC
    )

    hits = search.search("собака", SCOPE, limit=5, now=NOW, after=after, before=before, about=span)

    assert hits and {h.entry.at for h in hits} == {
        datetime(2026, 11, 24, 10, tzinfo=UTC).timestamp()
    }
