"""Each person's data in a real LINE family group (signed webhooks, the fake Messaging
API): Amy asks to forget what she noted; David's "yes" does nothing; Amy's own "yes",
written without mentioning Lore, forgets hers and is answered in the group."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from tests.line_server import FakeLine, line_gateway, line_settings

JOHN = "U10000000000000000000000000000j0h"
AMY = "U20000000000000000000000000000a3y"
DAVID = "U30000000000000000000000000000d4v"
FAMILY = "C1000000000000000000000000000fam1"
SCOPE = f"line:group:{FAMILY}"


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine() as server:
        server.profiles.update({JOHN: "John", AMY: "Amy 美美", DAVID: "David"})
        yield server


async def test_only_amys_own_yes_in_the_group_forgets_what_she_noted(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    from dataclasses import replace

    config = replace(config, line=line_settings(fake, owner_ids=(JOHN,)))
    model.default = lambda request: "ok"
    async with line_gateway(config, model, clock, fake) as line:
        memory = line.lore.memory
        memory.remember(SCOPE, "Amy is vegetarian", author="Amy 美美", via="tool", now=clock.now())
        memory.remember(SCOPE, "David fixes bikes", author="David", via="tool", now=clock.now())

        await line.say("/forget-mine", user=AMY, group=FAMILY)
        [asked] = await line.sent(1)
        assert "Amy 美美, forget this memory" in asked["messages"][0]["text"]

        await line.say("yes", user=DAVID, group=FAMILY)  # not addressed, not Amy's question
        await line.channel.drain()
        assert len(memory.active(SCOPE, now=clock.now())) == 2

        await line.say("yes", user=AMY, group=FAMILY)
        [_, answered] = await line.sent(2)
        assert answered["messages"][0]["text"].startswith("Forgot 1 memory of Amy 美美's")
        assert [m.content for m in memory.active(SCOPE, now=clock.now())] == ["David fixes bikes"]
