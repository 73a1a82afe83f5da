"""Discord, end to end: the real discord.py client against a fake Discord (REST and the
gateway websocket) on 127.0.0.1, the scripted model behind Lore."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from lore.channels.discord import STRANGER, DiscordChannel
from lore.clock import FixedClock
from lore.config import Config, DiscordConfig
from lore.health import HEALTH
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


async def _press(fake: FakeDiscord, message_id: str, label: str, author: dict[str, Any]) -> None:
    """Press a button until Discord's client takes it: a press that comes before the
    client has stored the message's buttons (it learns them from the send's answer,
    which the fake records first) goes unseen, and the person presses again."""
    for _ in range(20):
        answered = len(fake.callbacks) + 1
        await asyncio.to_thread(lambda: fake.press(message_id, label, author=author))
        if await asyncio.to_thread(fake.wait_for, partial(_at_least, fake, answered), 0.5):
            return
    raise AssertionError(f"the {label} button was never taken")


def _at_least(fake: FakeDiscord, count: int) -> bool:
    return len(fake.callbacks) >= count


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


async def test_the_owner_in_a_dm_is_answered_and_a_stranger_gets_one_line(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    lore, _ = discord
    model.reply("Tokyo.")
    await _say(
        fake,
        "What is the capital of Japan?",
        channel="700000000000000001",
        author=JOHN,
        guild=False,
    )
    [answer] = await _sent(fake, 1)
    assert answer["content"] == "Tokyo." and "message_reference" not in answer
    scope = f"discord:dm:{JOHN['id']}"
    assert lore.config.is_owner_scope(scope)
    user_said, _ = lore.session(scope).messages
    assert (user_said["author"], user_said["author_id"]) == ("John", JOHN["id"])
    await _say(fake, "hi, who are you?", channel="700000000000000009", author=EVE, guild=False)
    sent = await _sent(fake, 2)
    assert sent[1]["content"] == STRANGER and sent[1]["channel_id"] == "700000000000000009"
    assert lore.session(f"discord:dm:{EVE['id']}").messages == []
    assert len(model.requests) == 1


async def test_a_thread_is_a_conversation_of_its_own(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    lore, _ = discord
    model.default = _echo
    thread = await asyncio.to_thread(fake.thread, "trip planning", parent=FAMILY)
    await _say(fake, "the hotel is in Hualien", channel=FAMILY, author=MOM)
    await _say(fake, "which hotel?", channel=thread, author=JOHN, mention_bot=True)
    [sent] = await _sent(fake, 1)
    assert sent["channel_id"] == thread
    [request] = model.requests
    assert [m["content"] for m in request.messages] == ["which hotel?"]
    assert [m["content"] for m in lore.session(f"discord:{FAMILY}").messages] == [
        "the hotel is in Hualien"
    ]


async def test_a_reply_to_lore_and_the_slash_command_are_said_to_lore(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    model.default = _echo
    await _say(fake, "привет", channel=FAMILY, author=MOM, mention_bot=True)
    [first] = await _sent(fake, 1)
    await _say(fake, "и ещё вопрос", channel=FAMILY, author=MOM, reply_to=first["id"])
    sent = await _sent(fake, 2)
    assert sent[1]["content"] == "re: и ещё вопрос"
    interaction = await asyncio.to_thread(
        lambda: fake.slash("明天几点出发?", channel=FAMILY, author=JOHN)
    )
    sent = await _sent(fake, 3)
    [deferred] = [c for c in fake.callbacks if c["interaction_id"] == interaction]
    assert deferred["type"] == 5  # "Lore is thinking…", at once
    assert sent[2]["content"] == "re: 明天几点出发?" and sent[2]["channel_id"] == FAMILY
    assert any(c.startswith("POST /webhooks/") for c in fake.calls)  # the follow-up


async def test_a_burst_in_one_channel_is_answered_in_order(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    model.default = _echo
    for n in range(10):
        await _say(
            fake, f"question {n}", channel=FAMILY, author=MOM if n % 2 else JOHN, mention_bot=True
        )
    sent = await _sent(fake, 10)
    assert [s["content"] for s in sent] == [f"re: question {n}" for n in range(10)]


async def test_a_rate_limited_send_is_retried_after_retry_after(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    model.reply("Noted.")
    fake.rate_limit = 1
    await _say(
        fake,
        "remember the wifi password is on the fridge",
        channel=FAMILY,
        author=JOHN,
        mention_bot=True,
    )
    [sent] = await _sent(fake, 1)
    assert sent["content"] == "Noted."
    assert fake.calls.count(f"POST /channels/{FAMILY}/messages") == 2  # a 429, then sent
    assert len(fake.wait_sent(2, timeout=1)) == 1


async def test_a_dropped_gateway_is_resumed_without_losing_or_repeating_a_message(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    lore, _ = discord
    model.default = _echo
    await _say(fake, "before the drop", channel=FAMILY, author=JOHN, mention_bot=True)
    await _sent(fake, 1)
    await asyncio.to_thread(lambda: fake.drop(hold=True))
    assert await asyncio.to_thread(lambda: fake.wait_for(lambda: fake.resumes))
    assert HEALTH.channels["discord"] == "reconnecting (gateway)"  # what /health shows
    # Said while the bot is away: Discord keeps it and replays it after the RESUME.
    await _say(fake, "during the drop", channel=FAMILY, author=MOM, mention_bot=True)
    await asyncio.to_thread(fake.release)
    sent = await _sent(fake, 2)
    assert [s["content"] for s in sent] == ["re: before the drop", "re: during the drop"]
    [resume] = fake.resumes
    for _ in range(100):  # RESUMED comes after the replay
        if HEALTH.channels["discord"] == "connected (gateway)":
            break
        await asyncio.sleep(0.05)
    assert HEALTH.channels["discord"] == "connected (gateway)"
    assert resume["token"] == TOKEN and resume["seq"] >= 3
    assert len(fake.identifies) == 1  # resumed, not a new session
    # A session Discord refuses to resume: a new IDENTIFY; a message seen again (Discord
    # sending one twice) is answered once, by its id in the ledger.
    await asyncio.to_thread(lambda: fake.drop(invalidate=True))
    assert await asyncio.to_thread(lambda: fake.wait_for(lambda: len(fake.identifies) == 2))
    [again] = [
        m for m in fake.messages.values() if m["content"] == f"<@{BOT['id']}> during the drop"
    ]
    await asyncio.to_thread(lambda: fake.dispatch("MESSAGE_CREATE", again))
    await _say(fake, "after", channel=FAMILY, author=MOM, mention_bot=True)
    sent = await _sent(fake, 3)
    assert [s["content"] for s in sent][2:] == ["re: after"]
    assert len(fake.wait_sent(4, timeout=1)) == 3
    said = [m["content"] for m in lore.session(f"discord:{FAMILY}").messages if m["role"] == "user"]
    assert said == ["before the drop", "during the drop", "after"]


async def test_the_owner_approves_by_button_and_refuses_by_replying(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    lore, _ = discord
    dm = "700000000000000001"
    model.tool_call("write_file", {"path": "groceries.md", "content": "- молоко\n- 牛奶\n"})
    model.reply("Saved your list.")
    model.tool_call("write_file", {"path": "groceries.md", "content": "nothing\n"})
    model.reply("Left it as it was.")
    await _say(fake, "save my grocery list", channel=dm, author=JOHN, guild=False)
    [question] = await _sent(fake, 1)
    assert question["content"].startswith("May I create groceries.md?")
    labels = [b["label"] for row in question["components"] for b in row["components"]]
    assert labels == ["Allow", "Refuse"]
    await _press(fake, question["id"], "Allow", author=JOHN)
    sent = await _sent(fake, 2)
    assert sent[1]["content"] == "Saved your list."
    [pressed] = fake.callbacks
    assert pressed["type"] == 7 and pressed["data"]["content"].endswith("Allowed by John.")
    path = lore.workspace.root / "groceries.md"
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    await _say(fake, "now empty it", channel=dm, author=JOHN, guild=False)
    await _sent(fake, 3)
    await _say(fake, "no", channel=dm, author=JOHN, guild=False)
    sent = await _sent(fake, 4)
    assert sent[3]["content"] == "Left it as it was."
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    tools = [m for m in lore.session(f"discord:dm:{JOHN['id']}").messages if m["role"] == "tool"]
    assert [t["decision"]["outcome"] for t in tools] == ["approved", "refused"]
    assert tools[0]["decision"]["by"] == "John (discord)"


async def test_a_long_answer_is_split_at_2000_characters(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    text = ("Ein langer Absatz über Hualien. " * 60 + "\n\n") * 3
    model.reply(text)
    await _say(fake, "tell me everything", channel=FAMILY, author=JOHN, mention_bot=True)
    sent = await _sent(fake, 3)
    assert len(sent) >= 3 and all(len(s["content"]) <= 2000 for s in sent)
    assert " ".join(" ".join(s["content"] for s in sent).split()) == " ".join(text.split())
    assert "message_reference" in sent[0] and "message_reference" not in sent[1]


async def test_a_message_a_crash_left_unanswered_is_forgotten_everywhere_then_answered_once(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeDiscord,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lore.channels.chat_inbox import LEASE_SECONDS
    from lore.channels.discord_api import Said
    from lore.cli import main

    discord_settings = settings(fake)
    said = Said(
        message_id="1000000000000000777",
        channel_id=FAMILY,
        guild_id="800000000000000001",
        author_id=MOM["id"],
        author="Mom",
        text="记得明天带护照 / не забудь паспорт",
        addressed=True,
    )
    lore = build(replace(config, discord=discord_settings), provider=model, clock=clock)
    channel = DiscordChannel(lore, discord_settings)
    assert channel.inbox.receive(said.message_id, said.payload())  # then the process died
    await lore.aclose()
    assert main(["forget", "--everywhere", "--phrase", "ПАСПОРТ"]) == 0
    assert "lore.db: 1 chat message not yet answered" in capsys.readouterr().out
    assert main(["forget", "--everywhere", "--phrase", "ПАСПОРТ", "--yes"]) == 0
    assert "паспорт".encode() not in (config.home / "lore.db").read_bytes()
    clock.advance(seconds=LEASE_SECONDS + 1)
    model.default = _echo
    async with _running(config, model, clock, discord_settings) as (lore, channel):
        # The next `lore serve` takes what the dead one left, as it starts.
        await asyncio.to_thread(fake.wait_sent, 1)
        await channel.drain()
        assert channel.inbox.sweep() == []
        # Discord sends it again: its id is in the ledger, it is not answered twice.
        assert not channel.inbox.receive(said.message_id, said.payload())
    [answer] = fake.wait_sent(1)
    assert answer["channel_id"] == FAMILY and "паспорт" not in answer["content"]
    assert str(answer["message_reference"]["message_id"]) == said.message_id


@asynccontextmanager
async def _running(
    config: Config, model: ScriptedProvider, clock: FixedClock, discord: DiscordConfig
) -> AsyncIterator[tuple[Runtime, DiscordChannel]]:
    lore = build(replace(config, discord=discord), provider=model, clock=clock)
    channel = DiscordChannel(lore, discord)
    task = asyncio.create_task(channel.run_forever())
    try:
        await asyncio.wait_for(channel.ready.wait(), timeout=20)
        yield lore, channel
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await lore.aclose()


async def test_a_server_members_turn_offers_no_file_or_shell_tools(
    discord: tuple[Runtime, DiscordChannel], fake: FakeDiscord, model: ScriptedProvider
) -> None:
    model.default = _echo
    await _say(fake, "hello", channel=FAMILY, author=MOM, mention_bot=True)
    await _sent(fake, 1)
    offered = {spec.name for spec in model.requests[0].tools}
    assert offered.isdisjoint({"read_file", "write_file", "exec"})
    assert "set_reminder" in offered


async def test_the_owners_dm_is_the_owner_conversation_and_its_reminder_comes_to_the_dm(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeDiscord
) -> None:
    from lore.channels.owner import owner_reminders
    from lore.config import OWNER_SCOPE, ChannelsConfig
    from lore.reminders.delivery import session_delivery
    from lore.reminders.scheduler import Scheduler

    channels = ChannelsConfig(unified_owner_session=True, reminder_channel="discord")
    unified = replace(config, channels=channels)
    model.tool_call("set_reminder", {"text": "позвонить маме", "when": "in 10 minutes"})
    model.reply("Хорошо.")
    dm = "700000000000000001"
    async with _running(unified, model, clock, settings(fake)) as (lore, channel):
        await _say(
            fake, "напомни позвонить маме через 10 минут", channel=dm, author=JOHN, guild=False
        )
        await _sent(fake, 1)
        [reminder] = lore.reminders.list(OWNER_SCOPE)
        into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
        later = clock.now() + timedelta(minutes=11)
        with (
            lore.bus.deliver_for("discord", channel.deliver),
            lore.bus.deliver_to(OWNER_SCOPE, owner_reminders(lore, {"discord": channel.deliver})),
        ):
            scheduler = Scheduler(lore.reminders, FixedClock(later), into_session)
            assert len(await scheduler.run_once(later)) == 1
        sent = await _sent(fake, 2)
    assert reminder.text == "позвонить маме"
    assert sent[1]["content"] == "⏰ позвонить маме"
    assert sent[1]["channel_id"] == dm
    assert "POST /users/@me/channels" in fake.calls


async def test_what_was_said_while_lore_serve_was_down_is_caught_up_on_when_it_starts(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeDiscord
) -> None:
    model.default = _echo
    async with _running(config, model, clock, settings(fake)):
        await _say(fake, "first", channel=FAMILY, author=MOM, mention_bot=True)
        await _sent(fake, 1)
    # No `lore serve` is connected: Discord will not replay these to a new session.
    await _say(fake, "a note while you were away", channel=FAMILY, author=MOM)
    await _say(fake, "did you get that?", channel=FAMILY, author=JOHN, mention_bot=True)
    async with _running(config, model, clock, settings(fake)) as (lore, channel):
        sent = await _sent(fake, 2)
        await channel.drain()
        said = [m for m in lore.session(f"discord:{FAMILY}").messages if m["role"] == "user"]
    assert [s["content"] for s in sent] == ["re: first", "re: did you get that?"]
    assert [(m["author"], m["content"]) for m in said] == [
        ("Mom", "first"),
        ("Mom", "a note while you were away"),
        ("John", "did you get that?"),
    ]
    assert f"GET /channels/{FAMILY}/messages" in fake.calls
    assert len(fake.wait_sent(3, timeout=1)) == 2
