"""Each person's data in a Telegram group (the real python-telegram-bot client against a
fake Bot API): Mom asks to forget what she noted; the owner's "yes" does nothing; Mom's
own "да", not addressed to Lore, forgets hers and is answered in the group."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import pytest

from lore.channels.telegram import TelegramChannel
from lore.clock import FixedClock
from lore.config import Config, TelegramConfig
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.telegram_server import FakeTelegram

OWNER = {"id": 111, "is_bot": False, "first_name": "John"}
MOM = {"id": 222, "is_bot": False, "first_name": "Mom"}
FAMILY = {"id": -1001, "type": "supergroup", "title": "Family"}
SCOPE = "telegram:-1001"


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


async def test_only_moms_own_yes_in_the_group_forgets_what_she_noted(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    settings = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, owner_ids=("111",), poll_seconds=1
    )
    lore = build(replace(config, telegram=settings), provider=model, clock=clock)
    channel = TelegramChannel(lore, settings)
    task = asyncio.create_task(channel.run_forever())
    model.default = lambda request: "ok"
    try:
        lore.memory.remember(SCOPE, "Мама любит пионы", author="Mom", via="tool", now=clock.now())
        lore.memory.remember(SCOPE, "John runs", author="John", via="tool", now=clock.now())

        fake.say("/forget-mine", chat=FAMILY, sender=MOM)
        [asked] = await asyncio.to_thread(fake.wait_sent, 1)
        assert asked["text"].startswith("Mom, forget this memory")

        fake.say("yes", chat=FAMILY, sender=OWNER)  # not addressed, and not John's question
        fake.say("да", chat=FAMILY, sender=MOM)
        [_, answered] = await asyncio.to_thread(fake.wait_sent, 2)
        assert answered["text"].startswith("Forgot 1 memory of Mom's")
        assert [m.content for m in lore.memory.active(SCOPE, now=clock.now())] == ["John runs"]
    finally:
        channel.stop()
        await asyncio.wait_for(task, timeout=10)
        await lore.aclose()
