"""Relevant or absent on every surface that searches: in a home whose conversation holds
only small talk and a delivered reminder, a query about nothing stored finds nothing
through `lore memory search`, REST `/api/search` and the model's `memory_search`, in
English, Chinese and Russian, while a query about the reminder still finds it. Short chat
lines sit near every query in e5's space, so these tests use the real embedding model."""

from __future__ import annotations

import json

import pytest

from lore.cli import main
from lore.core.tools import ToolContext
from lore.messages import Role
from lore.runtime import Runtime
from lore.search import searcher
from lore.search.tool import MemorySearchTool
from tests.gateway_server import running_gateway

# These judge what search finds: they embed with the real model.
pytestmark = pytest.mark.search_quality

HOME = "cli:default"
SMALL_TALK: list[tuple[Role, str]] = [
    ("user", "hello there"),
    ("assistant", "Hi! How can I help?"),
    ("user", "what time is it"),
    ("assistant", "It is 5 pm."),
    ("user", "ok thanks"),
    ("assistant", "⏰ Reminder: call mom"),
    ("user", "你好"),
    ("assistant", "好的，谢谢"),
    ("user", "Привет!"),
    ("assistant", "Спасибо, понял"),
]
NOTHING_STORED = ["xylophone quantum volcano", "school", "学校", "школа", "量子火山"]


def _small_talk_home(lore: Runtime) -> None:
    lore.session(HOME).append([{"role": role, "content": text} for role, text in SMALL_TALK])
    found = searcher(lore)
    found.index_live(HOME)
    found.embed_pending()


@pytest.mark.parametrize("query", NOTHING_STORED)
async def test_a_query_about_nothing_stored_finds_nothing_in_the_cli(
    lore: Runtime, capsys: pytest.CaptureFixture[str], query: str
) -> None:
    _small_talk_home(lore)
    capsys.readouterr()

    assert main(["memory", "search", query, "--json"]) == 0

    assert json.loads(capsys.readouterr().out) == []


async def test_a_query_about_nothing_stored_finds_nothing_through_rest(lore: Runtime) -> None:
    _small_talk_home(lore)
    with running_gateway(lore) as gateway, gateway.client() as http:
        for query in NOTHING_STORED:
            found = http.get("/api/search", params={"scope": HOME, "q": query})
            assert found.status_code == 200
            assert found.json() == {"results": []}, query


async def test_a_query_about_nothing_stored_finds_nothing_through_memory_search(
    lore: Runtime,
) -> None:
    _small_talk_home(lore)
    ctx = ToolContext(HOME, "john", "live-1", 0, lore.clock.now(), "Asia/Taipei")
    tool = MemorySearchTool(lore)

    for query in NOTHING_STORED:
        reply = await tool.run({"query": query}, ctx)
        assert reply.startswith(f"Nothing found for {query!r}"), reply


async def test_a_query_about_the_reminder_still_finds_it(lore: Runtime) -> None:
    _small_talk_home(lore)

    hits = searcher(lore).search("call mother", HOME)

    assert [hit.entry.text for hit in hits][:1] == ["⏰ Reminder: call mom"]
