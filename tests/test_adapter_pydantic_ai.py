"""`lore.adapters.pydantic_ai.LoreMessageHistory` under the real pydantic-ai: an agent
(its model pydantic-ai's own FunctionModel, the only fake part) goes on from the history
an earlier open of the same home saved, and the memory block can be its instructions."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import lore
from lore.adapters.pydantic_ai import LoreMessageHistory
from lore.errors import InvalidInputError


class Model:
    """Answers a tool call first when asked to, else the next reply; keeps what it saw."""

    def __init__(self, *replies: str, call: tuple[str, dict[str, str]] | None = None) -> None:
        self.replies, self.call = list(replies), call
        self.seen: list[list[ModelMessage]] = []
        self.instructions: list[str | None] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(messages)
        self.instructions.append(info.instructions)
        if self.call is not None:
            name, args = self.call
            self.call = None
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart(self.replies.pop(0))])


def _agent(model: Model, memory: lore.Memory) -> Agent[None, str]:
    agent = Agent(FunctionModel(model), instructions="Be brief.")

    @agent.instructions
    def lore_memory() -> str:
        return memory.block().text

    @agent.tool_plain
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"Sunny in {city}"

    return agent


def _said(messages: list[ModelMessage]) -> list[str]:
    texts: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart | TextPart):
                texts.append(str(part.content))
    return texts


def test_an_agent_goes_on_from_the_history_another_open_saved(home: Path) -> None:
    model = Model("Солнечно, запомнил.", "You live in Kazan.", call=("weather", {"city": "Казань"}))
    with lore.Memory(home=home, scope="api:ivan") as memory:
        memory.remember("Ivan lives in Kazan", kind="profile")
        history = LoreMessageHistory(memory)
        first = _agent(model, memory).run_sync(
            "Погода в Казани?", message_history=history.messages()
        )
        history.save(first.new_messages())
        saved = first.new_messages()
    with lore.Memory(home=home, scope="api:ivan") as memory:
        history = LoreMessageHistory(memory)
        assert history.messages() == saved  # exactly what the run produced
        second = _agent(model, memory).run_sync(
            "Where do I live?", message_history=history.messages()
        )
        history.save(second.new_messages())
        transcript = memory.runtime.session("api:ivan").messages
    assert second.output == "You live in Kazan."
    assert _said(model.seen[-1]) == ["Погода в Казани?", "Солнечно, запомнил.", "Where do I live?"]
    assert "#1 [profile] Ivan lives in Kazan" in (model.instructions[-1] or "")
    assert [(m["role"], m["content"]) for m in transcript] == [
        ("user", "Погода в Казани?"),
        ("assistant", ""),
        ("tool", "Sunny in Казань"),
        ("assistant", "Солнечно, запомнил."),
        ("user", "Where do I live?"),
        ("assistant", "You live in Kazan."),
    ]
    assert transcript[1]["tool_calls"][0]["name"] == "weather"
    assert transcript[2]["tool_call_id"] == transcript[1]["tool_calls"][0]["id"]


def test_a_lore_chat_turn_reads_as_messages_and_clear_archives(home: Path) -> None:
    with lore.Memory(home=home) as memory:
        memory.runtime.session(memory.scope).append(
            [{"role": "user", "content": "我住在花莲", "author": "john"}]
        )
        history = LoreMessageHistory(memory)
        [request] = history.messages()
        assert isinstance(request, ModelRequest) and _said([request]) == ["我住在花莲"]
        history.clear()
        assert history.messages() == []
        [archived] = memory.runtime.sessions.archive.entries()
        assert archived.message_count == 1


async def test_the_async_forms_over_async_memory(home: Path) -> None:
    async with lore.AsyncMemory(home=home) as memory:
        history = LoreMessageHistory(memory)
        said: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart("hello")]),
            ModelResponse(parts=[TextPart("hi")]),
        ]
        await history.asave(said)
        assert _said(await history.amessages()) == ["hello", "hi"]
        await history.aclear()
        assert await history.amessages() == []


def test_bad_input_is_refused_and_stores_nothing(home: Path) -> None:
    with lore.Memory(home=home) as memory:
        history = LoreMessageHistory(memory)
        fine = ModelRequest(parts=[UserPromptPart("kept?")])
        with pytest.raises(InvalidInputError, match="pydantic-ai messages"):
            history.save([fine, {"role": "user"}])  # type: ignore[list-item]
        assert history.messages() == []
