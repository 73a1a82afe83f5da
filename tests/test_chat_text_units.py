"""Text that is easy to get wrong on the wire: LINE's textV2 takes `{key}` as a placeholder
and `{{` `}}` as a literal brace (the fake Messaging API refuses anything else, as LINE
does); LINE's mention offsets and Telegram's entity offsets count UTF-16 units, so an emoji
(two units) or Chinese text before a mention must not shift it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from lore.channels.line_api import LineApi, LineApiError, mention_message
from lore.channels.telegram import TelegramChannel
from lore.clock import FixedClock
from lore.config import Config, TelegramConfig
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.ports.outbox import OutboxItem, ReminderPayload
from lore.reminders.delivery import Delivery
from lore.runtime import build
from tests.line_server import FakeLine, line_gateway, line_settings, no_wait
from tests.line_server import LineGateway as Line
from tests.telegram_server import FakeTelegram

JOHN = "U1111111111111111111111111111111a"
MOM = "U2222222222222222222222222222222b"
FAMILY = "C0000000000000000000000000000f4m1"
TRICKY = "🎂 給媽媽買蛋糕 {生日} }{ {{x}} {user} 🎉 торт"


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine() as server:
        server.profiles.update({JOHN: "John", MOM: "媽媽 🌸"})
        yield server


@pytest.fixture
async def line(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> AsyncIterator[Line]:
    settings = replace(config, line=line_settings(fake, owner_ids=(JOHN,)))
    async with line_gateway(settings, model, clock, fake) as running:
        yield running


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _due(scope: str, author: str, text: str, *, late: bool = False) -> Delivery:
    payload = ReminderPayload(7, text, author, datetime(2026, 11, 30, 8, 0, tzinfo=UTC), late=late)
    created = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
    return Delivery(OutboxItem(0, f"r7@{text}", scope, "line", "reminder", payload, "pending",
                               0, created), created)  # fmt: skip


async def test_a_reminder_with_braces_and_emoji_mentions_its_author_as_line_renders_it(
    line: Line, model: ScriptedProvider
) -> None:
    model.default = _echo
    await line.say("我在這裡 / я здесь", user=MOM, group=FAMILY)  # Mom spoke: her id is known
    await line.channel.drain()
    await line.channel.deliver(_due(f"line:group:{FAMILY}", "媽媽 🌸", TRICKY, late=True))
    [push] = await line.sent(1)
    [message] = push["messages"]
    assert message["type"] == "textV2"
    assert message["substitution"]["user"]["mentionee"] == {"type": "user", "userId": MOM}
    # As LINE shows it in the group: the mention, then the text exactly as it was set.
    shown = line.fake.transcript(FAMILY).splitlines()[-1]
    assert shown == (
        f"Lore (push): ⏰ Reminder for @媽媽 🌸: {TRICKY} (late)"
        " — was due Mon 2026-11-30 08:00 (UTC)"
    )


async def test_line_refuses_a_brace_that_is_not_escaped(fake: FakeLine, config: Config) -> None:
    api = LineApi(line_settings(fake), sleep=no_wait)
    try:
        with pytest.raises(LineApiError) as refused:
            await api.push(FAMILY, [mention_message("⏰ {user}: {oops}", MOM)], retry_key="k1")
        sent = await api.push(FAMILY, [mention_message("⏰ {user}: {{ok}}", MOM)], retry_key="k2")
    finally:
        await api.aclose()
    assert refused.value.status == 400
    assert len(sent) == 1 and len(fake.sent) == 1


async def test_a_mention_of_lore_after_emoji_and_chinese_is_taken_out_of_the_text(
    line: Line, model: ScriptedProvider
) -> None:
    model.default = _echo
    await line.say("🎂🎉 奶奶 @Lore 几点到？🛬", user=MOM, group=FAMILY, mention_bot=True)
    [answer] = await line.sent(1)
    assert [m["text"] for m in answer["messages"]] == ["re: 🎂🎉 奶奶 几点到？🛬"]


async def test_a_telegram_reminder_mentions_an_author_with_emoji_at_the_right_utf16_offset(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    mom = {"id": 222, "is_bot": False, "first_name": "媽媽🌸"}
    family = {"id": -1001, "type": "supergroup", "title": "Family"}
    with FakeTelegram() as api:
        settings = TelegramConfig(
            token="123:TEST", base_url=api.base_url, owner_ids=("111",), poll_seconds=1
        )
        lore = build(replace(config, telegram=settings), provider=model, clock=clock)
        channel = TelegramChannel(lore, settings)
        task = asyncio.create_task(channel.run_forever())
        try:
            api.say("記得我 🎂", chat=family, sender=mom)  # not addressed: only kept
            for _ in range(500):
                if lore.session("telegram:-1001").messages:
                    break
                await asyncio.sleep(0.01)
            due = _due("telegram:-1001", "媽媽🌸", "🎂 買蛋糕 {生日}")
            await channel.deliver(due)
            [push] = await asyncio.to_thread(api.wait_sent, 1)
        finally:
            channel.stop()
            await asyncio.wait_for(task, timeout=15)
            await lore.aclose()
    assert push["text"] == "⏰ Reminder for @媽媽🌸: 🎂 買蛋糕 {生日}"
    [mention] = push["entities"]
    units = push["text"].encode("utf-16-le")
    start, length = 2 * mention["offset"], 2 * mention["length"]
    assert units[start : start + length].decode("utf-16-le") == "@媽媽🌸"
    assert (mention["type"], mention["user"]["id"]) == ("text_mention", 222)
