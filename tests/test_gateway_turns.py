"""The gateway's turns: one at a time per conversation, concurrently across them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from lore.channels.http.turns import Turns
from lore.events import CommandOutput, Event, ReplyFinished
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime


def _echo(delay: float) -> Callable[[ChatRequest], Step]:
    def answer(request: ChatRequest) -> Step:
        text = [m for m in request.messages if m["role"] == "user"][-1]["content"]
        return Step(text=f"re: {text}", delay=delay)

    return answer


async def test_messages_in_one_scope_run_in_arrival_order_without_interleaving(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.default = _echo(0.01)
    turns = Turns(lore)
    events: list[Event] = []
    authors = ["ann", "bo", "chen"]
    await asyncio.gather(
        *(
            turns.send("line:group:family", authors[i % 3], f"message {i}", events.append)
            for i in range(20)
        )
    )
    messages = lore.session("line:group:family").messages
    assert [m["content"] for m in messages] == [
        line for i in range(20) for line in (f"message {i}", f"re: message {i}")
    ]
    assert [m["author"] for m in messages if m["role"] == "user"] == [
        authors[i % 3] for i in range(20)
    ]
    assert sum(isinstance(e, ReplyFinished) for e in events) == 20


async def test_two_scopes_run_their_turns_at_once(lore: Runtime, model: ScriptedProvider) -> None:
    model.default = _echo(0.5)
    turns = Turns(lore)
    start = time.perf_counter()
    await asyncio.gather(
        turns.send("api:a", "a", "hello", lambda e: None),
        turns.send("api:b", "b", "hello", lambda e: None),
    )
    assert time.perf_counter() - start < 0.9  # one turn's wait, not two


async def test_a_refused_command_is_an_event_not_an_exception(lore: Runtime) -> None:
    events: list[Event] = []
    await Turns(lore).send("api:x", "x", "/nonsense", events.append)
    assert len(events) == 1 and isinstance(events[0], CommandOutput)
    assert not events[0].ok and "/nonsense" in events[0].text
