"""The family server on Discord, end to end: the real discord.py client against a fake
Discord (REST and the gateway websocket) on 127.0.0.1, the scripted model behind Lore.

Two people write in the family's channel. Amy asks Lore to remember when mom's flight
lands; David corrects the time; the memory shows the correction. Amy asks to be
reminded; the reminder comes back to the channel with a real mention of her, once,
though `lore serve` was stopped and started in between (and Discord sent an old message
again). The climbing club's channel never sees any of it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from lore.channels.discord import DiscordChannel
from lore.cli import main
from lore.clock import FixedClock
from lore.config import Config, DiscordConfig
from lore.llm.scripted import ScriptedProvider
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime, build
from tests.discord_server import FakeDiscord, user
from tests.readme_transcripts import docs_text
from tests.test_line_family import Script

TOKEN = "TEST.TOKEN.discord"
FAMILY = "810000000000000001"
CLIMBING = "810000000000000002"
FAMILY_SCOPE = f"discord:{FAMILY}"
CLIMBING_SCOPE = f"discord:{CLIMBING}"
JOHN = user("100000000000000001", "John")
AMY = user("100000000000000002", "amy", nick="Amy 美美")
DAVID = user("100000000000000003", "David")
ZOE = user("100000000000000004", "Zoe")


@pytest.fixture
def fake() -> Iterator[FakeDiscord]:
    with FakeDiscord({FAMILY: "family", CLIMBING: "climbing"}) as server:
        yield server


@pytest.fixture
def family_config(config: Config, fake: FakeDiscord) -> Config:
    discord = DiscordConfig(token=TOKEN, api_base_url=fake.api_base_url, owner_ids=(JOHN["id"],))
    return replace(config, discord=discord, extraction=replace(config.extraction, enabled=True))


@asynccontextmanager
async def serving(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, DiscordChannel]]:
    """One `lore serve`'s Discord: the runtime and the bot on the gateway."""
    lore = build(config, provider=model, clock=clock)
    channel = DiscordChannel(lore, config.discord)
    task = asyncio.create_task(channel.run_forever())
    try:
        await asyncio.wait_for(channel.ready.wait(), timeout=20)
        yield lore, channel
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await lore.aclose()


async def _say(fake: FakeDiscord, text: str, **kwargs: Any) -> str:
    return await asyncio.to_thread(lambda: fake.say(text, **kwargs))


async def _settle(
    fake: FakeDiscord, lore: Runtime, channel: DiscordChannel, count: int
) -> list[dict[str, Any]]:
    """Wait for `count` messages out, then for the turns' after-work (extraction)."""
    sent = await asyncio.to_thread(fake.wait_sent, count)
    await channel.drain()
    await lore.background.drain()
    return sent


async def test_the_family_server_remembers_corrects_and_reminds_and_no_one_else_sees_it(
    family_config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeDiscord,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Script()
    model.default = script

    async with serving(family_config, model, clock) as (lore, channel):
        script.call("remember", '{"content": "Mom\'s flight lands Thursday 3 PM", "kind": "plan"}')
        script.say("Noted: mom's flight lands Thursday 3 PM.")
        await _say(
            fake,
            "remember mom's flight lands Thursday 3 PM",
            channel=FAMILY,
            author=AMY,
            mention_bot=True,
        )
        [noted] = await _settle(fake, lore, channel, 1)
        assert noted["channel_id"] == FAMILY and noted["content"].startswith("Noted")
        [first] = lore.memory.active(FAMILY_SCOPE, now=clock.now())
        assert (first.content, first.author) == ("Mom's flight lands Thursday 3 PM", "Amy 美美")

        # David corrects the time, replying to Lore; extraction updates the note.
        script.say("Got it, 5 PM.")
        update = {"op": "update", "id": first.id, "content": "Mom's flight lands Thursday 5 PM"}
        script.extraction.append(json.dumps([update]))
        await _say(
            fake,
            "actually her flight lands at 5 PM, not 3",
            channel=FAMILY,
            author=DAVID,
            reply_to=noted["id"],
        )
        await _settle(fake, lore, channel, 2)
        [corrected] = lore.memory.active(FAMILY_SCOPE, now=clock.now())
        assert (corrected.content, corrected.author) == (
            "Mom's flight lands Thursday 5 PM",
            "David",
        )
        history = lore.memory.history(FAMILY_SCOPE, corrected.id)
        assert {entry.actor for entry in history} == {"Amy 美美", "David"}

        script.call("set_reminder", '{"text": "pick up mom at the airport", "when": "in 2 hours"}')
        script.say("I'll remind you in 2 hours.")
        asked = await _say(
            fake,
            "remind me to pick up mom at the airport in 2 hours",
            channel=FAMILY,
            author=AMY,
            mention_bot=True,
        )
        await _settle(fake, lore, channel, 3)
        [reminder] = lore.reminders.list(FAMILY_SCOPE)
        assert reminder.author == "Amy 美美"

    # `lore serve` stops and starts again on the same home.
    due = clock.now() + timedelta(hours=2, minutes=1)
    async with serving(family_config, model, clock) as (lore, channel):
        assert len(fake.identifies) == 2  # a new session with the gateway
        # Discord sends an old message again: its id is in the ledger, it is not answered.
        again = fake.messages[asked]
        await asyncio.to_thread(lambda: fake.dispatch("MESSAGE_CREATE", again))
        into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
        with lore.bus.deliver_for("discord", channel.deliver):
            scheduler = Scheduler(lore.reminders, FixedClock(due), into_session)
            assert len(await scheduler.run_once(due)) == 1
            assert await scheduler.run_once(due + timedelta(hours=1)) == []
        sent = await _settle(fake, lore, channel, 4)
        assert len(fake.wait_sent(5, timeout=1)) == 4  # once, and the old message unanswered
        push = sent[3]
        assert push["channel_id"] == FAMILY
        assert push["content"] == f"⏰ Reminder for <@{AMY['id']}>: pick up mom at the airport"
        assert push["allowed_mentions"]["users"] == [int(AMY["id"])]
        reminded = [m for m in lore.session(FAMILY_SCOPE).messages if m.get("reminder_id")]
        assert len(reminded) == 1

        # The climbing club's channel: Zoe asks; nothing of the family's reaches the model.
        before = len(model.requests)
        script.call("memory_search", '{"query": "mom flight airport"}')
        script.say("Nothing on record.")
        await _say(
            fake, "when does mom's flight land?", channel=CLIMBING, author=ZOE, mention_bot=True
        )
        answers = await _settle(fake, lore, channel, 5)
        assert answers[4]["channel_id"] == CLIMBING
        others = [r for r in model.requests[before:] if r.system != EXTRACTION_PROMPT]
        assert others
        for request in others:
            seen = request.system + "".join(str(m.get("content")) for m in request.messages)
            assert "Thursday" not in seen and "5 PM" not in seen and "3 PM" not in seen
        assert lore.memory.active(CLIMBING_SCOPE, now=clock.now()) == []
        assert lore.reminders.list(CLIMBING_SCOPE) == []

    assert fake.transcript(FAMILY) in docs_text()
    main(["memory", "list", "--scope", CLIMBING_SCOPE])
    main(["remind", "list", "--session", CLIMBING_SCOPE])
    listed = capsys.readouterr().out
    assert "Thursday" not in listed and "airport" not in listed
    main(["memory", "list", "--scope", FAMILY_SCOPE])
    listed = capsys.readouterr().out
    assert listed == "#2 [plan] Mom's flight lands Thursday 5 PM (noted by David, 2026-11-30)\n"
