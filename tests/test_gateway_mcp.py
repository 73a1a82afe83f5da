"""MCP: the memory tools through the SDK's own client, over Streamable HTTP and stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway

TOOLS = {
    "remember",
    "forget",
    "search",
    "list_memories",
    "set_reminder",
    "list_reminders",
    "cancel_reminder",
    "session_list",
    "session_history",
}


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


def _http(gateway: Gateway, token: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http))


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_the_tools_are_listed_over_http(gateway: Gateway) -> None:
    async with _http(gateway, "editor-token") as client:
        tools = await client.list_tools()
    assert {tool.name for tool in tools.tools} == TOOLS


async def test_remember_list_search_and_forget_over_http(gateway: Gateway) -> None:
    async with _http(gateway, "editor-token") as client:
        noted = await client.call_tool("remember", {"content": "The editor prefers tabs 縮排"})
        assert not noted.is_error and _text(noted).startswith("Noted #")
        listed = json.loads(_text(await client.call_tool("list_memories", {})))
        assert listed["scope"] == "mcp:editor"
        memory_id = listed["memories"][0]["id"]
        found = await client.call_tool("search", {"query": "縮排"})
        assert "tabs" in _text(found)
        forgot = await client.call_tool("forget", {"id": memory_id})
        assert _text(forgot) == f"Forgot #{memory_id}."
    now = gateway.lore.clock.now()
    assert gateway.lore.memory.active("mcp:editor", now=now) == []


async def test_reminders_over_http(gateway: Gateway) -> None:
    async with _http(gateway, "editor-token") as client:
        result = await client.call_tool(
            "set_reminder", {"text": "review the PR", "when": "tomorrow 9am"}
        )
        assert not result.is_error and "review the PR" in _text(result)
        pending = await client.call_tool("list_reminders", {})
        reminder_id = int(_text(pending).split()[0].lstrip("#"))
        cancelled = await client.call_tool("cancel_reminder", {"id": reminder_id})
        assert _text(cancelled) == f"Cancelled reminder #{reminder_id}: review the PR"
        assert _text(await client.call_tool("list_reminders", {})) == "No pending reminders."


async def test_sessions_over_http(gateway: Gateway) -> None:
    gateway.lore.session("mcp:editor").append([{"role": "user", "content": "привет"}])
    async with _http(gateway, "editor-token") as client:
        sessions = json.loads(_text(await client.call_tool("session_list", {})))
        assert sessions["live"]["message_count"] == 1
        history = json.loads(_text(await client.call_tool("session_history", {})))
        assert history["messages"][0]["content"] == "привет"


async def test_a_client_is_confined_to_its_scope(gateway: Gateway) -> None:
    gateway.lore.memory.remember(
        "cli:default", "Owner secret", author="john", via="cli", now=gateway.lore.clock.now()
    )
    async with _http(gateway, "editor-token") as client:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("list_memories", {}),
            ("search", {"query": "secret"}),
            ("forget", {"id": 1}),
            ("remember", {"content": "x"}),
            ("list_reminders", {}),
            ("session_history", {}),
        ]
        for name, args in calls:
            result = await client.call_tool(name, {**args, "scope": "cli:default"})
            assert result.is_error
            assert _text(result).endswith(": this token may not use that conversation")
        # Its own scope does not see the owner's memory #1 either.
        missing = await client.call_tool("forget", {"id": 1})
        assert missing.is_error and "no memory #1" in _text(missing)


async def test_the_mcp_endpoint_needs_a_token(gateway: Gateway) -> None:
    with gateway.client(token="wrong") as http:
        reply = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert reply.status_code == 401


async def test_stdio_serves_the_owner(home: Path) -> None:
    lore_bin = Path(sys.executable).with_name("lore")
    params = StdioServerParameters(
        command=str(lore_bin),
        args=["mcp", "--session", "cli:default"],
        env={"LORE_HOME": str(home), "LORE_USER": "john", "LORE_TIMEZONE": "Asia/Taipei"},
    )
    async with Client(params) as client:
        tools = await client.list_tools()
        assert {tool.name for tool in tools.tools} == TOOLS
        noted = await client.call_tool("remember", {"content": "John lives in Hualien"})
        assert _text(noted).startswith("Noted #")
        elsewhere = await client.call_tool(
            "remember", {"content": "Family dinner on Sundays", "scope": "line:group:family"}
        )
        assert not elsewhere.is_error
        listed = json.loads(_text(await client.call_tool("list_memories", {})))
    assert [m["content"] for m in listed["memories"]] == ["John lives in Hualien"]
    assert listed["memories"][0]["author"] == "john"


async def test_search_over_rest_mcp_and_the_page_runs_off_the_event_loop(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedding and ranking take a while: each surface runs them in a worker thread, as
    the model's memory_search does, so the loop keeps serving everyone else."""
    import asyncio

    from lore.search import LoreSearch

    on_loop: list[bool] = []
    search = LoreSearch.search

    def watched(self: LoreSearch, *args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # no loop runs in this thread: a worker's
            on_loop.append(False)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(LoreSearch, "search", watched)
    gateway.lore.memory.remember(
        "mcp:editor", "Редактор любит табы", author="john", via="cli", now=gateway.lore.clock.now()
    )
    async with _http(gateway, "editor-token") as client:
        assert "табы" in _text(await client.call_tool("search", {"query": "табы"}))
    with gateway.client("editor-token") as http:
        rest = http.get("/api/search", params={"q": "табы", "scope": "mcp:editor"})
        assert rest.status_code == 200 and rest.json()["results"]
    with gateway.page() as page:
        assert "табы" in page.get("/ui/search", params={"q": "табы"}).text
    assert on_loop == [False, False, False]
