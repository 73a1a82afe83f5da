"""What LINE and Telegram remember across a restart of `lore serve`, on both backends: a
reply quoting Lore is still said to Lore, a redelivered event or update is not handled
twice, and a message whose turn a crash cut short (after the webhook call was answered,
or the update confirmed) is answered by the next process, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest

from lore.channels.chat_inbox import LEASE_SECONDS
from lore.channels.line import LineChannel
from lore.channels.line_api import LineApi
from lore.channels.telegram import TelegramChannel
from lore.clock import FixedClock
from lore.config import Config, TelegramConfig
from lore.errors import StoreError
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.ports.chat_ledger import ChatLedger
from lore.runtime import Runtime, build
from tests.line_server import FakeLine, Webhooks, line_gateway, line_settings, no_wait
from tests.owner_scenario import FAMILY, JOHN, MOM, TG_OWNER, TG_OWNER_CHAT
from tests.postgres_server import storage  # noqa: F401  (local and PostgreSQL)
from tests.telegram_server import FakeTelegram


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine() as server:
        server.profiles.update({JOHN: "John", MOM: "Mom 媽媽"})
        yield server


def _line(config: Config, fake: FakeLine) -> Config:
    return replace(config, line=line_settings(fake, owner_ids=(JOHN,)))


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _texts(sent: dict[str, Any]) -> list[str]:
    return [m["text"] for m in sent["messages"]]


async def _crash(tasks: set[asyncio.Task[None]]) -> None:
    """The process dies: its work in hand stops where it is (nothing after it runs)."""
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _restart(clock: FixedClock) -> None:
    """Time for the dead process's leases to run out."""
    clock.advance(seconds=LEASE_SECONDS + 1)


# -- LINE -----------------------------------------------------------------------------------


async def test_a_reply_quoting_lore_is_still_said_to_lore_after_a_restart(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    model.default = _echo
    settings = _line(config, fake)
    async with line_gateway(settings, model, clock, fake) as line:
        await line.say("@Lore 奶奶的航班几点到？", user=MOM, group=FAMILY, mention_bot=True)
        [answer] = await line.sent(1)
    async with line_gateway(settings, model, clock, fake) as line:
        await line.say("谢谢！and the hotel?", user=MOM, group=FAMILY, quoted=answer["ids"][0])
        sent = await line.sent(2)
    assert _texts(sent[1]) == ["re: 谢谢！and the hotel?"]
    assert len(model.requests) == 2


async def test_a_redelivered_event_after_a_restart_is_not_handled_twice(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    model.default = _echo
    settings = _line(config, fake)
    async with line_gateway(settings, model, clock, fake) as line:
        event = line.hooks.text("только один раз / 只一次", user=JOHN)
        await line.post(event)
        await line.sent(1)
    async with line_gateway(settings, model, clock, fake) as line:
        redelivered = dict(event, deliveryContext={"isRedelivery": True})
        answer = await line.post(redelivered)
        await line.channel.drain()
        messages = line.lore.session(f"line:user:{JOHN}").messages
    assert answer.status_code == 200
    assert len(fake.sent) == 1 and len(model.requests) == 1
    assert [m["content"] for m in messages] == [
        "только один раз / 只一次",
        "re: только один раз / 只一次",
    ]


async def test_a_webhook_call_whose_events_cannot_be_recorded_fails_and_lines_retry_is_answered(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    model.default = _echo
    async with line_gateway(_line(config, fake), model, clock, fake) as line:
        line.channel.inbox.ledger = _FailingOnce(line.channel.inbox.ledger)
        event = line.hooks.text("奶奶几点到？ / когда прилетает?", user=JOHN)
        refused = await line.post(event)
        await line.channel.drain()
        assert refused.status_code >= 500 and fake.sent == [] and model.requests == []
        retried = await line.post(dict(event, deliveryContext={"isRedelivery": True}))
        [push] = await line.sent(1)
        await line.channel.drain()
    assert retried.status_code == 200
    # The first call's reply token was never used, so the answer is still a reply.
    assert _texts(push) == ["re: 奶奶几点到？ / когда прилетает?"]
    assert len(fake.sent) == 1 and len(model.requests) == 1


@asynccontextmanager
async def _line_channel(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, LineChannel]]:
    """LINE without the HTTP server: what the webhook route calls, called directly."""
    lore = build(config, provider=model, clock=clock)
    channel = LineChannel(lore, config.line, api=LineApi(config.line, sleep=no_wait))
    try:
        yield lore, channel
    finally:
        await channel.aclose()
        await lore.aclose()


async def test_a_crash_after_the_webhook_was_answered_loses_no_message(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    settings = _line(config, fake)
    hooks = Webhooks(fake)
    event = hooks.text("记得明天带护照 / не забудь паспорт", user=JOHN)
    async with _line_channel(settings, model, clock) as (lore, channel):
        await channel.handle(channel.parse(*_signed(event)))  # recorded: the 200 goes out
        await _crash(channel._tasks)  # before the turn began
        assert lore.session(f"line:user:{JOHN}").messages == []
    assert fake.sent == [] and model.requests == []
    _restart(clock)
    model.reply("好的，护照。Паспорт — да.")
    async with _line_channel(settings, model, clock) as (lore, channel):
        [left] = channel.inbox.sweep()
        await channel.resume(left)
        await channel.drain()
        assert channel.inbox.sweep() == []  # handled: never again
        said = [m["content"] for m in lore.session(f"line:user:{JOHN}").messages]
    [push] = fake.sent  # the reply token is long stale: a push
    assert (push["kind"], push["to"], _texts(push)) == ("push", JOHN, ["好的，护照。Паспорт — да."])
    assert said == ["记得明天带护照 / не забудь паспорт", "好的，护照。Паспорт — да."]


async def test_a_message_a_stopped_process_left_is_answered_at_once_by_the_next_one(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    settings = _line(config, fake)
    event = Webhooks(fake).text("明天带护照 / паспорт завтра", user=JOHN)
    async with _line_channel(settings, model, clock) as (first, channel):
        await channel.handle(channel.parse(*_signed(event)))  # recorded, not answered
        await _crash(channel._tasks)
        async with _line_channel(settings, model, clock) as (_, other):
            assert other.inbox.sweep() == []  # its holder lives: not another's to answer
    # That process has ended: no waiting for its lease to run out (the clock stands).
    model.reply("好的 / хорошо")
    async with _line_channel(settings, model, clock) as (lore, channel):
        [left] = channel.inbox.sweep()
        await channel.resume(left)
        await channel.drain()
        assert channel.inbox.sweep() == []
    [push] = fake.sent
    assert (push["to"], _texts(push)) == (JOHN, ["好的 / хорошо"])


async def test_forget_everywhere_rewrites_a_message_not_yet_answered_which_is_answered_once(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeLine,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lore.cli import main

    settings = _line(config, fake)
    hooks = Webhooks(fake)
    event = hooks.text("记得明天带护照 / не забудь паспорт", user=JOHN)
    async with _line_channel(settings, model, clock) as (lore, channel):
        await channel.handle(channel.parse(*_signed(event)))  # recorded, never answered
        await _crash(channel._tasks)
    if config.database_url:
        monkeypatch.setenv("LORE_DATABASE_URL", config.database_url)
    where = "PostgreSQL" if config.database_url else "lore.db"
    assert main(["forget", "--everywhere", "--phrase", "ПАСПОРТ"]) == 0
    assert f"{where}: 1 chat message not yet answered" in capsys.readouterr().out
    assert main(["forget", "--everywhere", "--phrase", "ПАСПОРТ", "--yes"]) == 0
    assert "no copy is left" in capsys.readouterr().out
    if not config.database_url:
        assert "паспорт".encode() not in (config.home / "lore.db").read_bytes()
    _restart(clock)
    model.default = _echo
    async with _line_channel(settings, model, clock) as (lore, channel):
        # Its id is kept: LINE's redelivery is still recognised and not answered twice.
        redelivered = dict(event, deliveryContext={"isRedelivery": True})
        await channel.handle(channel.parse(*_signed(redelivered)))
        [left] = channel.inbox.sweep()
        await channel.resume(left)
        await channel.drain()
        said = [m["content"] for m in lore.session(f"line:user:{JOHN}").messages]
    # Still answered (the rest of the message may matter), with the words replaced.
    assert said[0] == "记得明天带护照 / не забудь [forgotten]"
    assert [_texts(push) for push in fake.sent] == [["re: 记得明天带护照 / не забудь [forgotten]"]]
    assert len(model.requests) == 1


async def test_a_turn_cut_short_by_a_stop_is_answered_after_the_restart_once(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    settings = _line(config, fake)
    model.reply("too late", delay=3600)  # the model is slow; the process stops meanwhile
    async with line_gateway(settings, model, clock, fake) as line:
        await line.say("@Lore what's for dinner?", user=MOM, group=FAMILY, mention_bot=True)
        for _ in range(1000):
            if model.requests:
                break
            await asyncio.sleep(0.01)
        await _crash(line.channel._tasks)
    _restart(clock)
    model.reply("Dumplings 🥟.")
    async with line_gateway(settings, model, clock, fake) as line:
        keeping = asyncio.create_task(line.channel.run_forever())  # as `lore serve` runs it
        [push] = await line.sent(1)
        await line.channel.drain()
        keeping.cancel()
        await asyncio.gather(keeping, return_exceptions=True)
        window = [m["content"] for m in model.requests[-1].messages]
    assert (push["kind"], push["to"], _texts(push)) == ("push", FAMILY, ["Dumplings 🥟."])
    assert window == ["what's for dinner?"]  # the cancelled try is not in the window
    assert len(fake.wait_sent(2, timeout=1)) == 1


def _signed(event: dict[str, Any]) -> tuple[bytes, str]:
    from tests.line_server import sign

    body = Webhooks.body(event)
    return body, sign(body)


# -- Telegram -------------------------------------------------------------------------------


def _telegram(config: Config, api: FakeTelegram) -> Config:
    settings = TelegramConfig(
        token="123:TEST", base_url=api.base_url, owner_ids=("111",), poll_seconds=1
    )
    return replace(config, telegram=settings)


@asynccontextmanager
async def _polling(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, TelegramChannel]]:
    lore = build(config, provider=model, clock=clock)
    channel = TelegramChannel(lore, config.telegram)
    task = asyncio.create_task(channel.run_forever())
    try:
        yield lore, channel
    finally:
        channel.stop()
        await asyncio.wait_for(task, timeout=15)
        await lore.aclose()


@pytest.fixture
def api() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


async def test_a_telegram_update_polled_again_after_a_restart_is_answered_once(
    config: Config, model: ScriptedProvider, clock: FixedClock, api: FakeTelegram
) -> None:
    model.default = _echo
    settings = _telegram(config, api)
    async with _polling(settings, model, clock):
        api.say("напомни про паспорт / 护照", chat=TG_OWNER_CHAT, sender=TG_OWNER)
        await asyncio.to_thread(api.wait_sent, 1)
    # The next process polls from the start: Telegram sends the update again.
    before = api.calls.count("getUpdates")
    async with _polling(settings, model, clock):
        for _ in range(500):  # until it asked past the update it was sent again
            if api.calls.count("getUpdates") >= before + 2:
                break
            await asyncio.sleep(0.01)
    assert len(api.sent) == 1 and len(model.requests) == 1


async def test_telegram_confirms_an_update_only_once_it_is_recorded(
    config: Config, model: ScriptedProvider, clock: FixedClock, api: FakeTelegram
) -> None:
    model.default = _echo
    async with _polling(_telegram(config, api), model, clock) as (_, channel):
        channel.inbox.ledger = _FailingOnce(channel.inbox.ledger)
        api.say("первое / 第一", chat=TG_OWNER_CHAT, sender=TG_OWNER)
        [sent] = await asyncio.to_thread(api.wait_sent, 1)
    assert sent["text"] == "re: первое / 第一"
    assert channel.inbox.ledger.failed_offsets == [1]  # getUpdates came back for it
    assert len(api.sent) == 1


class _FailingOnce:
    """The ledger, failing its first `receive` (the disk was full for a moment)."""

    def __init__(self, ledger: ChatLedger) -> None:
        self.ledger = ledger
        self.failed = False
        self.failed_offsets: list[int] = []

    def receive(self, *args: Any, **kwargs: Any) -> bool:
        if not self.failed:
            self.failed = True
            self.failed_offsets.append(int(args[1]))
            raise StoreError("database or disk is full")
        return self.ledger.receive(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, name)


async def test_a_telegram_update_whose_turn_a_crash_cut_short_is_answered_after_the_restart(
    config: Config, model: ScriptedProvider, clock: FixedClock, api: FakeTelegram
) -> None:
    from telegram import Update

    settings = _telegram(config, api)
    api.say("купи молоко / 买牛奶", chat=TG_OWNER_CHAT, sender=TG_OWNER)
    slow = ScriptedProvider().reply("never shown", delay=3600)
    lore = build(settings, provider=slow, clock=clock)
    channel = TelegramChannel(lore, settings.telegram)
    update = Update.de_json(api.updates[0], channel.bot)
    assert update is not None
    assert await channel.accept(update)  # recorded: the offset may pass it now
    await _crash(channel._tasks)
    await lore.aclose()
    _restart(clock)
    model.reply("Куплю. 好的。")
    async with _polling(settings, model, clock) as (lore, channel):
        [sent] = await asyncio.to_thread(api.wait_sent, 1)
        await channel.drain()
        messages = lore.session("telegram:111").messages
        said = [m["content"] for m in messages if not m.get("cancelled")]
    assert (sent["chat_id"], sent["text"]) == (111, "Куплю. 好的。")
    assert said == ["купи молоко / 买牛奶", "Куплю. 好的。"]
    assert len(model.requests) == 1
