"""Forgotten stays forgotten on the gateway's own surfaces: a memory forgotten through MCP
or the web page's forget button is restated neither by MCP `search` nor by the page's
search, though the turn that said it is still in the transcript."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.ports.memories import Source
from lore.runtime import Runtime, build
from lore.search import searcher
from tests.gateway_server import Gateway, running_gateway

SAID = [
    ("remember that I love jazz", "User loves jazz music", "jazz"),
    ("记住我喜欢爵士乐", "用户喜欢爵士乐", "爵士"),
    ("запомни, что я люблю джаз", "Пользователь любит джаз", "джаз"),
]


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[api.clients.editor]\ntoken = "editor-token"\nscopes = ["mcp:editor"]\n',
        encoding="utf-8",
    )
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _said_and_noted(lore: Runtime, scope: str, said: str, fact: str) -> int:
    """A turn that said it, indexed as live turns are, and the memory it became."""
    session = lore.session(scope)
    session.append([{"role": "user", "content": said}, {"role": "assistant", "content": "OK."}])
    memory, _ = lore.memory.remember(
        scope, fact, author="john", via="tool", now=lore.clock.now(),
        source=Source(session.meta.session_id, len(session.messages) - 2),
    )  # fmt: skip
    searcher(lore).index_live(scope)
    return memory.id


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.mark.parametrize("said,fact,word", SAID, ids=["en", "zh", "ru"])
async def test_a_memory_forgotten_over_mcp_is_not_restated_by_mcp_search(
    gateway: Gateway, said: str, fact: str, word: str
) -> None:
    memory_id = _said_and_noted(gateway.lore, "mcp:editor", said, fact)
    http = create_mcp_http_client(headers={"Authorization": "Bearer editor-token"})
    async with Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client:
        assert word in _text(await client.call_tool("search", {"query": word}))
        forgot = await client.call_tool("forget", {"id": memory_id})
        assert not forgot.is_error
        found = _text(await client.call_tool("search", {"query": word}))
    assert word not in found.casefold()
    kept = [m.get("content") for m in gateway.lore.session("mcp:editor").messages]
    assert said in kept


@pytest.mark.parametrize("said,fact,word", SAID, ids=["en", "zh", "ru"])
def test_a_memory_forgotten_by_the_web_pages_button_is_not_restated_by_its_search(
    gateway: Gateway, said: str, fact: str, word: str
) -> None:
    scope = "cli:default"
    memory_id = _said_and_noted(gateway.lore, scope, said, fact)
    with gateway.page() as page:
        before = page.get("/ui/search", params={"q": word, "scope": scope})
        assert before.status_code == 200 and word in before.text
        forgot = page.post(f"/ui/memories/{memory_id}/forget", params={"scope": scope})
        assert forgot.status_code == 200
        after = page.get("/ui/search", params={"q": word, "scope": scope})
    assert after.status_code == 200
    assert f"#{memory_id}" not in after.text and fact not in after.text
    assert gateway.lore.memory.active(scope, now=gateway.lore.clock.now()) == []
