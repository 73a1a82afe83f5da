"""Telegram, end to end: the real python-telegram-bot client against a fake Bot API on
127.0.0.1, the scripted model behind Lore."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from lore.channels.telegram import STRANGER, TelegramChannel, split_message
from lore.clock import FixedClock
from lore.config import Config, TelegramConfig
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime, build
from tests.telegram_server import BOT_ID, BOT_USERNAME, FakeTelegram

OWNER = {"id": 111, "is_bot": False, "first_name": "John"}
MOM = {"id": 222, "is_bot": False, "first_name": "Mom"}
STRANGER_USER = {"id": 999, "is_bot": False, "first_name": "Eve"}
OWNER_CHAT = {"id": 111, "type": "private", "first_name": "John"}
FAMILY = {"id": -1001, "type": "supergroup", "title": "Family"}


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


@pytest.fixture
async def telegram(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> AsyncIterator[tuple[Runtime, TelegramChannel]]:
    settings = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, owner_ids=("111",), poll_seconds=1
    )
    lore = build(replace(config, telegram=settings), provider=model, clock=clock)
    channel = TelegramChannel(lore, settings)
    task = asyncio.create_task(channel.run_forever())
    yield lore, channel
    channel.stop()
    await asyncio.wait_for(task, timeout=10)
    await lore.aclose()


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


async def _sent(fake: FakeTelegram, count: int) -> list[dict[str, Any]]:
    return await asyncio.to_thread(fake.wait_sent, count)


async def test_the_owner_talks_to_lore_in_a_private_chat(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    lore, _ = telegram
    model.reply("Tokyo.")
    fake.say("What is the capital of Japan?", chat=OWNER_CHAT, sender=OWNER)
    [sent] = await _sent(fake, 1)
    assert sent["chat_id"] == 111 and sent["text"] == "Tokyo."
    user, reply = lore.session("telegram:111").messages
    assert (user["author"], user["author_id"], user["channel"]) == ("John", "111", "telegram")
    assert reply["content"] == "Tokyo."
    assert lore.config.is_owner_scope("telegram:111")


async def test_a_stranger_in_a_private_chat_gets_one_line_and_nothing_is_kept(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    lore, _ = telegram
    fake.say("hi, who are you?", chat={"id": 999, "type": "private"}, sender=STRANGER_USER)
    [sent] = await _sent(fake, 1)
    assert sent["text"] == STRANGER
    assert lore.session("telegram:999").messages == []
    assert model.requests == []


async def test_in_a_group_lore_answers_when_addressed_and_otherwise_only_listens(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    lore, _ = telegram
    model.default = _echo
    fake.say("Grandma lands at 3 PM on Thursday", chat=FAMILY, sender=MOM)
    asked = fake.say(f"@{BOT_USERNAME} when does grandma land?", chat=FAMILY, sender=OWNER)
    [sent] = await _sent(fake, 1)
    assert sent["chat_id"] == -1001 and sent["reply_parameters"]["message_id"] == asked
    # The message nobody addressed to Lore is in the window of the one that was.
    [request] = model.requests
    assert [m["content"] for m in request.messages] == [
        "Grandma lands at 3 PM on Thursday",
        "when does grandma land?",
    ]
    assert "Speaking: John" in request.system
    fake.say("thanks!", chat=FAMILY, sender=MOM, reply_to_bot=True)
    await _sent(fake, 2)
    authors = [m.get("author") for m in lore.session("telegram:-1001").messages]
    assert authors == ["Mom", "John", None, "Mom", None]


async def test_a_group_is_named_by_its_title_renamed_with_it_and_its_join_logged(
    telegram: tuple[Runtime, TelegramChannel],
    fake: FakeTelegram,
    model: ScriptedProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    lore, _ = telegram
    model.default = _echo
    bot = {"id": BOT_ID, "is_bot": True, "first_name": "Lore", "username": BOT_USERNAME}
    with caplog.at_level(logging.INFO, logger="lore.channels.names"):
        fake.service(chat=FAMILY, sender=OWNER, new_chat_members=[bot])
        fake.say(f"@{BOT_USERNAME} hi", chat=FAMILY, sender=OWNER)
        await _sent(fake, 1)
    assert "telegram: Lore joined 'Family' as telegram:-1001" in caplog.text
    renamed = {**FAMILY, "title": "Семья 家"}
    fake.service(chat=renamed, sender=MOM, new_chat_title="Семья 家")
    fake.say("hi", chat=OWNER_CHAT, sender=OWNER)
    await _sent(fake, 2)
    names = lore.chat_ledger.conversation_names()
    assert names["telegram:-1001"].name == "Семья 家"
    assert names["telegram:111"].name == "John"


async def test_a_burst_in_one_group_is_answered_in_order(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    model.default = _echo
    for n in range(10):
        fake.say(f"@{BOT_USERNAME} question {n}", chat=FAMILY, sender=MOM if n % 2 else OWNER)
    sent = await _sent(fake, 10)
    assert [s["text"] for s in sent] == [f"re: question {n}" for n in range(10)]


async def test_a_get_updates_outage_is_retried_without_losing_an_update(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeTelegram,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lore.health import HEALTH

    reported: list[str] = []
    report = HEALTH.channel

    def record(name: str, state: str) -> None:
        reported.append(state)
        report(name, state)

    monkeypatch.setattr(HEALTH, "channel", record)
    fake.fail_get_updates = 2
    fake.say("are you there?", chat=OWNER_CHAT, sender=OWNER)
    settings = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, owner_ids=("111",), poll_seconds=1
    )
    lore = build(replace(config, telegram=settings), provider=model, clock=clock)
    channel = TelegramChannel(lore, settings)
    model.reply("Yes.")
    task = asyncio.create_task(channel.run_forever())
    try:
        [sent] = await _sent(fake, 1)
    finally:
        channel.stop()
        await asyncio.wait_for(task, timeout=15)
        await lore.aclose()
    assert sent["text"] == "Yes."
    assert fake.calls.count("getUpdates") >= 3
    # /health saw it: connected, retrying while getUpdates failed, connected again.
    assert reported[0] == "connected (long polling)"
    assert any(state.startswith("retrying: ") for state in reported)
    assert reported[-1] == "connected (long polling)"


async def test_a_reminder_comes_back_to_the_group_mentioning_who_set_it_once(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    lore, channel = telegram
    model.tool_call("set_reminder", {"text": "call grandma", "when": "in 10 minutes"}).reply(
        "I'll remind you."
    )
    fake.say(f"@{BOT_USERNAME} remind me to call grandma in 10 minutes", chat=FAMILY, sender=MOM)
    await _sent(fake, 1)
    deliver = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
    later = lore.clock.now() + timedelta(minutes=11)
    with lore.bus.deliver_for("telegram", channel.deliver):
        scheduler = Scheduler(lore.reminders, FixedClock(later), deliver)
        assert len(await scheduler.run_once(later)) == 1
        assert await scheduler.run_once(later + timedelta(minutes=5)) == []
    sent = await _sent(fake, 2)
    push = sent[1]
    assert push["chat_id"] == -1001 and push["text"] == "⏰ Reminder for @Mom: call grandma"
    [mention] = push["entities"]
    assert mention["type"] == "text_mention" and mention["user"]["id"] == 222
    assert push["text"][mention["offset"] : mention["offset"] + mention["length"]] == "@Mom"
    assert len(fake.wait_sent(3, timeout=1)) == 2  # delivered once


def test_a_long_reply_is_split_at_telegrams_limit() -> None:
    text = ("Ein langer Absatz über Hualien. " * 100 + "\n\n") * 3
    pieces = split_message(text)
    assert len(pieces) >= 3
    assert all(len(p.encode("utf-16-le")) // 2 <= 4096 for p in pieces)
    assert " ".join(" ".join(pieces).split()) == " ".join(text.split())
    emoji = "😀" * 5000  # two UTF-16 units each
    assert all(len(p.encode("utf-16-le")) // 2 <= 4096 for p in split_message(emoji))


async def test_the_owner_approves_a_tool_by_replying_in_the_chat(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    lore, _ = telegram
    model.tool_call("write_file", {"path": "groceries.md", "content": "- молоко\n- 牛奶\n"})
    model.reply("Saved your list.")
    model.tool_call("write_file", {"path": "groceries.md", "content": "nothing\n"})
    model.reply("Left it as it was.")
    fake.say("save my grocery list", chat=OWNER_CHAT, sender=OWNER)
    [question] = await _sent(fake, 1)
    assert question["text"].startswith("May I create groceries.md?\n\n--- /dev/null")
    assert "+- 牛奶" in question["text"]
    fake.say("y", chat=OWNER_CHAT, sender=OWNER)
    sent = await _sent(fake, 2)
    assert sent[1]["text"] == "Saved your list."
    path = lore.workspace.root / "groceries.md"
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    fake.say("now empty it", chat=OWNER_CHAT, sender=OWNER)
    await _sent(fake, 3)
    fake.say("no", chat=OWNER_CHAT, sender=OWNER)
    sent = await _sent(fake, 4)
    assert sent[3]["text"] == "Left it as it was."
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    tools = [m for m in lore.session("telegram:111").messages if m["role"] == "tool"]
    assert [t["decision"]["outcome"] for t in tools] == ["approved", "refused"]
    assert tools[0]["decision"]["by"] == "John (telegram)"
    said = [m["content"] for m in lore.session("telegram:111").messages if m["role"] == "user"]
    assert said == ["save my grocery list", "now empty it"]  # the answers are not messages


async def test_a_group_members_turn_offers_no_file_or_shell_tools(
    telegram: tuple[Runtime, TelegramChannel], fake: FakeTelegram, model: ScriptedProvider
) -> None:
    model.respond_with(_echo)
    fake.say(f"@{BOT_USERNAME} hello", chat=FAMILY, sender=MOM)
    await _sent(fake, 1)
    offered = {spec.name for spec in model.requests[0].tools}
    assert offered.isdisjoint({"read_file", "write_file", "exec"})
