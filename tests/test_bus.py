"""The bus: one queue per conversation scope, concurrency across scopes, routed events."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from lore.events import CommandOutput, Event, Inbound, ReminderDue
from lore.llm.base import ChatRequest, StreamEvent
from lore.llm.scripted import ScriptedProvider, Step
from lore.messages import content_text
from lore.runtime import Runtime
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

GROUP = "line:group:family"


def _echo(request: ChatRequest) -> Step:
    """Answer each message with its own text, after a pause (a slow model)."""
    said = request.messages[-1]["content"]
    return Step(text=f"re: {said}", delay=0.01)


async def test_twenty_messages_at_once_in_one_group_make_a_legal_transcript_in_order(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.default = _echo
    authors = ["Mom", "Dad", "Amy"]
    messages = [
        Inbound(GROUP, "line", authors[n % 3], f"message {n}", trust="member") for n in range(20)
    ]

    outcomes = await asyncio.gather(*(lore.bus.send(m) for m in messages))

    assert [o.text for o in outcomes] == [f"re: message {n}" for n in range(20)]
    stored = lore.session(GROUP).messages
    assert [m["role"] for m in stored] == ["user", "assistant"] * 20
    users = stored[0::2]
    assert [m["content"] for m in users] == [f"message {n}" for n in range(20)]
    assert [m["author"] for m in users] == [authors[n % 3] for n in range(20)]
    assert all(m["channel"] == "line" for m in users)
    # Each turn saw the whole conversation before it: no two built on the same history.
    chat = [
        r
        for r in model.requests
        if content_text(r.messages[-1].get("content")).startswith("message")
    ]
    assert [len(r.messages) for r in chat] == [2 * n + 1 for n in range(20)]


async def test_two_conversations_run_their_turns_at_the_same_time(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.default = Step(text="slow answer", delay=0.5)
    started = time.monotonic()
    await asyncio.gather(
        lore.bus.send(Inbound("cli:default", "cli", "john", "one")),
        lore.bus.send(Inbound("telegram:42", "telegram", "amy", "two")),
    )
    elapsed = time.monotonic() - started
    assert elapsed < 0.9  # about one turn, not two


async def test_one_conversation_runs_its_turns_one_at_a_time(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.default = Step(text="slow answer", delay=0.3)
    started = time.monotonic()
    await asyncio.gather(*(lore.bus.send(Inbound(GROUP, "line", "amy", "hi")) for _ in range(2)))
    assert time.monotonic() - started >= 0.6


async def test_each_message_carries_its_own_author_into_the_prompt(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("hi Mom").reply("hi Dad")
    await lore.bus.send(Inbound(GROUP, "line", "Mom", "hello", trust="member"))
    await lore.bus.send(Inbound(GROUP, "line", "Dad", "hello", trust="member"))
    assert "Speaking: Mom" in model.requests[0].system
    assert "Speaking: Dad" in model.requests[1].system


async def test_a_command_answers_with_an_event_and_never_reaches_the_model(
    lore: Runtime, model: ScriptedProvider
) -> None:
    events: list[Event] = []
    outcome = await lore.bus.send(Inbound("cli:default", "cli", "john", "/status"), events.append)
    assert isinstance(events[-1], CommandOutput) and "conversation:  cli:default" in events[-1].text
    assert outcome.ok and model.requests == []


async def test_events_no_message_asked_for_go_to_the_channel_attached_to_the_scope(
    lore: Runtime,
) -> None:
    seen: list[Event] = []
    due = ReminderDue(GROUP, "Reminder for @Amy: call grandma", 1)
    assert not lore.bus.publish(GROUP, due)  # nobody attached: nowhere to show it
    with lore.bus.attach(GROUP, seen.append):
        assert lore.bus.publish(GROUP, due)
        assert not lore.bus.publish("telegram:42", due)  # another scope's channel
    assert seen == [due]


async def test_owner_only_tools_are_never_offered_to_a_group_member(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("ok").reply("ok")
    await lore.bus.send(Inbound(GROUP, "line", "Amy", "hi", trust="member"))
    await lore.bus.send(Inbound("cli:default", "cli", "john", "hi"))
    offered = [[spec.name for spec in request.tools] for request in model.requests]
    assert "exec" not in offered[0] and "exec" in offered[1]


async def test_a_message_arriving_while_others_wait_still_waits_its_turn(
    lore: Runtime, model: ScriptedProvider
) -> None:
    running = 0
    most = 0

    async def one_at_a_time(request: ChatRequest) -> Step:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)
        running -= 1
        return Step(text="ok")

    class Slow(ScriptedProvider):
        async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
            step = await one_at_a_time(request)
            self.default = step
            async for event in super().stream(request):
                yield event

    slow = Slow()
    runtime = type(lore)(lore.config, provider=slow, clock=lore.clock)
    first = asyncio.create_task(runtime.bus.send(Inbound(GROUP, "line", "Mom", "one")))
    second = asyncio.create_task(runtime.bus.send(Inbound(GROUP, "line", "Dad", "two")))
    await first  # the second is now woken but has not run yet...
    third = asyncio.create_task(runtime.bus.send(Inbound(GROUP, "line", "Amy", "three")))
    await asyncio.gather(second, third)  # ...and the third must not overtake or join it
    assert most == 1
    said = [m["content"] for m in runtime.session(GROUP).messages if m["role"] == "user"]
    assert said == ["one", "two", "three"]
    await runtime.aclose()


async def test_a_channels_delivery_takes_its_scopes_and_one_scopes_delivery_comes_first(
    lore: Runtime,
) -> None:
    async def line(due: object) -> None: ...

    async def owner(due: object) -> None: ...

    with lore.bus.deliver_for("line", line), lore.bus.deliver_to("owner", owner):
        assert lore.bus.deliverer("line:group:C1") is line
        assert lore.bus.deliverer("line:user:U1:with:colons") is line
        assert lore.bus.deliverer("owner") is owner
        # Another channel whose name starts alike, a key that is only the word, none.
        for key in ("linex:1", "line", "telegram:42", "api:line:x", "owner:x"):
            assert lore.bus.deliverer(key) is None, key
        with lore.bus.deliver_to("line:group:C1", owner):
            assert lore.bus.deliverer("line:group:C1") is owner
    assert lore.bus.deliverer("line:group:C1") is None
