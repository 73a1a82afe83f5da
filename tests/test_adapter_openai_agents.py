"""`lore.adapters.openai_agents.LoreSession` under the real OpenAI Agents SDK: an agent's
runs talk to an OpenAI-compatible server on 127.0.0.1 (the only fake part), and the
history they keep is Lore's transcript of the scope, read again by a second open."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session, SessionSettings
from openai import AsyncOpenAI

import lore
from lore.adapters.openai_agents import LoreSession
from lore.errors import InvalidInputError
from tests.openai_server import FakeOpenAI

set_tracing_disabled(True)  # the SDK would send traces to OpenAI's servers


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _agent(server: FakeOpenAI, session: LoreSession, **more: Any) -> Agent[Any]:
    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    return Agent(
        name="helper",
        instructions=session.instructions("Be brief."),
        model=OpenAIChatCompletionsModel("gpt-4o-mini", client),
        **more,
    )


def _memory(home: Path) -> lore.AsyncMemory:
    return lore.AsyncMemory(home=home, scope="api:alice")


async def test_an_agent_keeps_its_history_in_lore_across_two_opens(
    home: Path, server: FakeOpenAI
) -> None:
    server.reply("花莲，记下了。").reply("You live in Hualien.")
    async with _memory(home) as memory:
        await memory.remember("Alice's daughter is called Mei", kind="relation")
        session = LoreSession(memory)
        assert isinstance(session, Session) and session.session_id == "api:alice"
        first = await Runner.run(_agent(server, session), "我现在住在花莲。", session=session)
    assert first.final_output == "花莲，记下了。"

    async with _memory(home) as memory:  # another open of the same home: a new process
        session = LoreSession(memory)
        second = await Runner.run(_agent(server, session), "Where do I live?", session=session)
        transcript = memory.runtime.session("api:alice").messages
    assert second.final_output == "You live in Hualien."
    sent = server.requests[1]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "我现在住在花莲。"),
        ("assistant", "花莲，记下了。"),
        ("user", "Where do I live?"),
    ]
    # The instructions are the caller's, then the block exactly as Lore's turn injects it.
    system = sent[0]["content"]
    assert system.startswith("Be brief.\n\n<long_term_memory>")
    assert "#1 [relation] Alice's daughter is called Mei" in system
    # Lore's own transcript holds the turns as Lore messages, by Lore's user.
    assert [(m["role"], m["content"]) for m in transcript] == [
        ("user", "我现在住在花莲。"),
        ("assistant", "花莲，记下了。"),
        ("user", "Where do I live?"),
        ("assistant", "You live in Hualien."),
    ]
    assert transcript[0]["author"] == memory.runtime.config.user_name


async def test_tool_calls_round_trip_and_read_as_lore_tool_messages(
    home: Path, server: FakeOpenAI
) -> None:
    @function_tool
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"Sunny in {city}"

    server.tool_call("weather", {"city": "Казань"}).reply("Солнечно.")
    async with _memory(home) as memory:
        session = LoreSession(memory)
        agent = _agent(server, session, tools=[weather])
        await Runner.run(agent, "Какая погода в Казани?", session=session)
        kept = await session.get_items()
    async with _memory(home) as memory:
        again = await LoreSession(memory).get_items()
        transcript = memory.runtime.session("api:alice").messages
    assert again == kept  # exactly the items the SDK handed over
    assert [item.get("type") for item in again] == [
        None,
        "function_call",
        "function_call_output",
        "message",
    ]
    call, result = transcript[1], transcript[2]
    assert call["tool_calls"][0]["name"] == "weather"
    assert json.loads(call["tool_calls"][0]["arguments"]) == {"city": "Казань"}
    assert (result["role"], result["content"]) == ("tool", "Sunny in Казань")
    assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    # The second model request carried the call and its result.
    assert server.requests[1]["messages"][-1]["content"] == "Sunny in Казань"


async def test_limit_pop_and_clear_lose_nothing_said(home: Path) -> None:
    async with _memory(home) as memory:
        session = LoreSession(memory, session_settings=SessionSettings(limit=2))
        items: list[Any] = [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three"},
        ]
        await session.add_items(items)
        assert await session.get_items() == items[1:]  # the settings' limit
        assert await session.get_items(limit=1) == items[2:]
        assert await session.get_items(limit=-1) == items  # the SDK's "no limit"
        assert await session.pop_item() == items[2]
        assert await session.get_items(limit=10) == items[:2]
        stored = memory.runtime.session("api:alice").messages
        assert stored[2]["content"] == "three" and stored[2]["cancelled"]  # taken back, kept
        await session.clear_session()
        assert await session.get_items() == [] and await session.pop_item() is None
        [archived] = memory.runtime.sessions.archive.entries()
        assert (archived.key, archived.message_count) == ("api:alice", 3)


async def test_a_conversation_lore_chat_had_reaches_the_agent_as_text_items(home: Path) -> None:
    async with _memory(home) as memory:
        memory.runtime.session("api:alice").append(
            [
                {"role": "user", "content": "Hi from the terminal", "author": "john"},
                {"role": "assistant", "content": "", "tool_calls": [], "interrupted": True},
                {"role": "assistant", "content": "Hello!"},
            ]
        )
        assert await LoreSession(memory).get_items() == [
            {"role": "user", "content": "Hi from the terminal"},
            {"role": "assistant", "content": "Hello!"},
        ]


async def test_bad_input_is_refused_and_stores_nothing(home: Path) -> None:
    with pytest.raises(InvalidInputError, match="lore.Memory or AsyncMemory"):
        LoreSession(object())  # type: ignore[arg-type]
    async with _memory(home) as memory:
        with pytest.raises(InvalidInputError, match="scope|key|empty"):
            LoreSession(memory, "   ")
        session = LoreSession(memory)
        fine: Any = {"role": "user", "content": "kept?"}
        broken: Any = {"role": "user", "content": object()}
        with pytest.raises(InvalidInputError, match="cannot be stored as JSON"):
            await session.add_items([fine, broken])
        assert await session.get_items() == []


def test_run_sync_over_the_blocking_memory(home: Path, server: FakeOpenAI) -> None:
    server.reply("Noted.").reply("Kazan.")
    for question in ("Я живу в Казани.", "Where do I live?"):
        with lore.Memory(home=home, scope="api:ivan") as memory:
            memory.remember("Ivan lives in Kazan", kind="profile")  # a duplicate: kept once
            session = LoreSession(memory)
            Runner.run_sync(_agent(server, session), question, session=session)
    sent = server.requests[1]["messages"]
    assert "#1 [profile] Ivan lives in Kazan" in sent[0]["content"]
    assert [m["content"] for m in sent[1:]] == ["Я живу в Казани.", "Noted.", "Where do I live?"]
