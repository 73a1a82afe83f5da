"""Discord, end to end: the real discord.py client against a fake Discord (REST and the
gateway websocket) on 127.0.0.1, the scripted model behind Lore."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import pytest

from lore.channels.discord import DiscordChannel
from lore.clock import FixedClock
from lore.config import Config, DiscordConfig
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime, build
from tests.discord_server import BOT, FakeDiscord, user

TOKEN = "TEST.TOKEN.discord"
FAMILY = "810000000000000001"
WORK = "810000000000000002"
JOHN = user("100000000000000001", "John")
MOM = user("100000000000000002", "mom_lin", nick="Mom")
EVE = user("100000000000000009", "Eve")


@pytest.fixture
def fake() -> Iterator[FakeDiscord]:
    with FakeDiscord({FAMILY: "family", WORK: "work"}) as server:
        yield server


def settings(fake: FakeDiscord) -> DiscordConfig:
    return DiscordConfig(token=TOKEN, api_base_url=fake.api_base_url, owner_ids=(JOHN["id"],))


@pytest.fixture
async def discord(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeDiscord
) -> AsyncIterator[tuple[Runtime, DiscordChannel]]:
    lore = build(replace(config, discord=settings(fake)), provider=model, clock=clock)
    channel = DiscordChannel(lore, lore.config.discord)
    task = asyncio.create_task(channel.run_forever())
    await asyncio.wait_for(channel.ready.wait(), timeout=20)
    yield lore, channel
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await lore.aclose()


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


async def _sent(fake: FakeDiscord, count: int) -> list[dict[str, Any]]:
    return await asyncio.to_thread(fake.wait_sent, count)


async def _say(fake: FakeDiscord, text: str, **kwargs: Any) -> str:
    return await asyncio.to_thread(lambda: fake.say(text, **kwargs))


async def test_two_people_in_a_server_channel(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    lore, _ = discord
    model.default = _echo
    await _say(fake, "Grandma lands at 3 PM on Thursday", channel=FAMILY, author=MOM)
    asked = await _say(
        fake, "when does grandma land?", channel=FAMILY, author=JOHN, mention_bot=True
    )
    [sent] = await _sent(fake, 1)
    assert sent["channel_id"] == FAMILY and sent["content"] == "re: when does grandma land?"
    assert str(sent["message_reference"]["message_id"]) == asked
    assert sent["allowed_mentions"]["parse"] == []
    [request] = model.requests
    assert [m["content"] for m in request.messages] == [
        "Grandma lands at 3 PM on Thursday",
        "when does grandma land?",
    ]
    authors = [m.get("author") for m in lore.session(f"discord:{FAMILY}").messages]
    assert authors == ["Mom", "John", None]
    assert fake.identifies[0]["intents"] & (1 << 15)  # the message content intent
