"""The bus keeps one queue per scope even at the moment a turn hands it to the next."""

from __future__ import annotations

import asyncio

from lore.bus import Outcome
from lore.events import Inbound
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime

SCOPE = "api:shared"


def _quiet_echo(request: ChatRequest) -> Step:
    # No streamed text: a second turn running beside the first shows up in the
    # transcript instead of blocking the loop on the reply draft's file lock.
    return Step(text="ok", delay=0.02)


async def test_a_message_arriving_as_the_queue_is_handed_over_still_waits_its_turn(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.default = _quiet_echo
    later: list[asyncio.Task[Outcome]] = []

    def send(text: str) -> asyncio.Task[Outcome]:
        return asyncio.create_task(lore.bus.send(Inbound(SCOPE, "api", "ann", text)))

    first, second = send("one"), send("two")
    # The third arrives right when the first finishes, while the second is being woken.
    first.add_done_callback(lambda _: later.append(send("three")))
    await asyncio.gather(first, second)
    await asyncio.gather(*later)

    roles = [m["role"] for m in lore.session(SCOPE).messages]
    assert roles == ["user", "assistant"] * 3
