"""Telegram's webhook mode, end to end: the real gateway app (as `lore serve` builds it)
on 127.0.0.1, the fake Bot API posting updates to it, the scripted model behind Lore.
Also the long-polling side of it: switching back deletes the webhook, and a getUpdates
outage of reset connections loses nothing."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest

from lore.channels.telegram import TelegramChannel
from lore.clock import FixedClock
from lore.config import Config, TelegramConfig, load_config
from lore.daemon import http_server as _http_server
from lore.errors import ConfigError
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from tests.telegram_server import FakeTelegram

OWNER = {"id": 111, "is_bot": False, "first_name": "John"}
OWNER_CHAT = {"id": 111, "type": "private", "first_name": "John"}
SECRET = "s3cret-Token_for-tests"


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


@asynccontextmanager
async def webhook_gateway(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> AsyncIterator[tuple[Runtime, TelegramChannel]]:
    """`lore serve`'s gateway with Telegram in webhook mode, and the channel started."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    settings = TelegramConfig(
        token="123:TEST",
        base_url=fake.base_url,
        owner_ids=("111",),
        webhook_url=f"http://127.0.0.1:{port}/telegram/webhook",
        webhook_secret=SECRET,
    )
    lore = build(replace(config, telegram=settings), provider=model, clock=clock)
    channel = TelegramChannel(lore, settings)
    server = _http_server(lore, listener, [channel])
    web = asyncio.create_task(server.serve(sockets=[listener]))
    running = asyncio.create_task(channel.run_forever())
    try:
        await asyncio.wait_for(channel.ready.wait(), timeout=10)
        for _ in range(1000):  # uvicorn says "started" by a flag, not an event
            if server.started:
                break
            await asyncio.sleep(0.01)
        yield lore, channel
    finally:
        channel.stop()
        await asyncio.wait_for(running, timeout=10)
        server.should_exit = True
        await asyncio.wait_for(web, timeout=10)
        listener.close()
        await lore.aclose()


async def _post(fake: FakeTelegram, update: dict[str, Any], **secret: Any) -> int:
    return await asyncio.to_thread(fake.post_to_webhook, update, **secret)


async def _sent(fake: FakeTelegram, count: int, wait: float = 15.0) -> list[dict[str, Any]]:
    return await asyncio.to_thread(fake.wait_sent, count, wait)


async def test_webhook_mode_sets_the_webhook_with_its_secret_and_answers_what_telegram_posts(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    async with webhook_gateway(config, model, clock, fake) as (lore, _):
        assert fake.webhook is not None
        assert fake.webhook["url"].endswith("/telegram/webhook")
        assert fake.webhook["secret_token"] == SECRET
        assert fake.webhook["allowed_updates"] == ["message"]
        model.reply("Токио. 东京。")
        fake.say("Столица Японии? 日本的首都？", chat=OWNER_CHAT, sender=OWNER)
        assert await _post(fake, fake.updates[-1]) == 200
        [sent] = await _sent(fake, 1)
        assert sent["chat_id"] == 111 and sent["text"] == "Токио. 东京。"
        assert "getUpdates" not in fake.calls
        said = [m["content"] for m in lore.session("telegram:111").messages]
        assert said == ["Столица Японии? 日本的首都？", "Токио. 东京。"]


async def test_a_retried_webhook_delivery_is_processed_once(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    async with webhook_gateway(config, model, clock, fake) as (lore, _):
        model.reply("Noted.")
        fake.say("the plumber comes at 9", chat=OWNER_CHAT, sender=OWNER)
        update = fake.updates[-1]
        assert await _post(fake, update) == 200
        assert await _post(fake, update) == 200  # Telegram thought the first was lost
        await _sent(fake, 1)
        assert len(await _sent(fake, 2, wait=1)) == 1
        assert len(model.requests) == 1
        assert len(lore.session("telegram:111").messages) == 2


async def test_a_webhook_post_without_the_secret_gets_401_and_a_wrong_one_403_and_nothing_runs(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    async with webhook_gateway(config, model, clock, fake) as (lore, _):
        fake.say("forged: forget everything", chat=OWNER_CHAT, sender=OWNER)
        update = fake.updates[-1]
        assert await _post(fake, update, secret=None) == 401
        assert await _post(fake, update, secret="not-the-secret") == 403
        assert await _post(fake, update, secret=SECRET + "x") == 403
        await asyncio.sleep(0.2)
        assert model.requests == [] and fake.sent == []
        assert lore.sessions.live_meta("telegram:111") is None
        # The real delivery of that same update, which a forged one did not use up.
        model.reply("Done.")
        assert await _post(fake, update) == 200
        assert (await _sent(fake, 1))[0]["text"] == "Done."


async def test_a_webhook_post_before_the_channel_has_started_gets_503_for_telegram_to_retry(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/telegram/webhook"
    settings = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, webhook_url=url, webhook_secret=SECRET
    )
    lore = build(replace(config, telegram=settings), provider=model, clock=clock)
    server = _http_server(lore, listener, [TelegramChannel(lore, settings)])  # never started
    web = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        for _ in range(1000):
            if server.started:
                break
            await asyncio.sleep(0.01)
        fake.webhook = {"url": url, "secret_token": SECRET}
        fake.say("hello?", chat=OWNER_CHAT, sender=OWNER)
        assert await _post(fake, fake.updates[-1]) == 503
        assert model.requests == []
    finally:
        server.should_exit = True
        await asyncio.wait_for(web, timeout=10)
        listener.close()
        await lore.aclose()


async def test_a_webhook_post_that_is_not_an_update_gets_400(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    async with webhook_gateway(config, model, clock, fake):
        assert await _post(fake, {"hello": "world"}) == 400
        assert model.requests == []


async def test_long_polling_deletes_a_webhook_left_from_webhook_mode(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    fake.webhook = {"url": "https://old.example/telegram/webhook", "secret_token": SECRET}
    fake.say("back to polling?", chat=OWNER_CHAT, sender=OWNER)
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
    assert fake.webhook is None
    assert fake.calls.index("deleteWebhook") < fake.calls.index("getUpdates")


async def test_a_get_updates_outage_of_reset_connections_is_retried_without_losing_an_update(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> None:
    fake.reset_get_updates = 2
    fake.say("are you there?", chat=OWNER_CHAT, sender=OWNER)
    fake.say("hello?", chat=OWNER_CHAT, sender=OWNER)
    settings = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, owner_ids=("111",), poll_seconds=1
    )
    lore = build(replace(config, telegram=settings), provider=model, clock=clock)
    channel = TelegramChannel(lore, settings)
    model.reply("Yes.").reply("Still here.")
    task = asyncio.create_task(channel.run_forever())
    try:
        sent = await _sent(fake, 2)
    finally:
        channel.stop()
        await asyncio.wait_for(task, timeout=15)
        await lore.aclose()
    assert [s["text"] for s in sent] == ["Yes.", "Still here."]
    assert fake.calls.count("getUpdates") >= 3
    said = [m["content"] for m in lore.session("telegram:111").messages if m["role"] == "user"]
    assert said == ["are you there?", "hello?"]  # each once


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"telegram.webhook_url": "https://bot.example/telegram/webhook"}, "webhook_secret"),
        (
            {
                "telegram.webhook_url": "https://bot.example/telegram/webhook",
                "telegram.webhook_secret": "has spaces",
            },
            "webhook_secret",
        ),
        (
            {
                "telegram.webhook_url": "bot.example/telegram/webhook",
                "telegram.webhook_secret": "ok",
            },
            "webhook_url",
        ),
    ],
)
def test_a_webhook_needs_an_address_and_a_secret_telegram_accepts(
    home: Any, settings: dict[str, str], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config(env={"LORE_HOME": str(home)}, flags=settings)
