"""One owner, many channels: with `channels.unified_owner_session` the owner's Telegram
chat and the terminal are one conversation (scope `owner`), and a reminder set in one
reaches the owner where they chose, once. Telegram is the fake Bot API on 127.0.0.1, the
terminal a second runtime on the same home (as a second process would be)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.channels.http.auth import Clients
from lore.channels.owner import owner_reminders, reminder_channel, terminal_delivers
from lore.channels.telegram import TelegramChannel
from lore.cli import main
from lore.clock import FixedClock
from lore.config import OWNER_SCOPE, ChannelsConfig, Config, TelegramConfig
from lore.events import Event, ReminderDue
from lore.llm.scripted import ScriptedProvider
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime, build
from tests.gateway_server import OWNER_TOKEN, gateway_in_loop
from tests.owner_scenario import (
    TG_OWNER,
    TG_OWNER_CHAT,
    ask_then_set_a_reminder_at_the_terminal,
    serve_scheduler,
)
from tests.telegram_server import BOT_USERNAME, FakeTelegram

MOM = {"id": 222, "is_bot": False, "first_name": "Mom"}
FAMILY = {"id": -1001, "type": "supergroup", "title": "Family"}


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


def unified(config: Config, fake: FakeTelegram, reminder_channel: str = "") -> Config:
    telegram = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, owner_ids=("111",), poll_seconds=1
    )
    channels = ChannelsConfig(unified_owner_session=True, reminder_channel=reminder_channel)
    return replace(config, telegram=telegram, channels=channels)


class Gateway:
    """What `lore serve` runs for this: Telegram, and the scheduler's delivery."""

    def __init__(self, lore: Runtime, channel: TelegramChannel) -> None:
        self.lore = lore
        self.channel = channel

    def scheduler(self) -> Scheduler:
        return serve_scheduler(self.lore)


@pytest.fixture
async def gateway(
    request: pytest.FixtureRequest,
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeTelegram,
) -> AsyncIterator[Gateway]:
    settings = unified(config, fake, getattr(request, "param", ""))
    lore = build(settings, provider=model, clock=clock)
    channel = TelegramChannel(lore, settings.telegram)
    task = asyncio.create_task(channel.run_forever())
    pushers = {"telegram": channel.deliver}
    with (
        lore.bus.deliver_for("telegram", channel.deliver),
        lore.bus.deliver_to(OWNER_SCOPE, owner_reminders(lore, pushers)),
    ):
        yield Gateway(lore, channel)
    channel.stop()
    await asyncio.wait_for(task, timeout=10)
    await lore.aclose()


async def _sent(fake: FakeTelegram, count: int, wait: float = 15.0) -> list[dict[str, Any]]:
    return await asyncio.to_thread(fake.wait_sent, count, wait)


async def test_what_the_owner_said_on_telegram_is_in_the_terminals_window_and_a_reminder_set_there_reaches_telegram_once(  # noqa: E501
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider, clock: FixedClock
) -> None:
    model.reply("Записал. 记下了。")
    fake.say("Мой рейс CI-100 в четверг в 7:00, 周四早上七点", chat=TG_OWNER_CHAT, sender=TG_OWNER)
    [answer] = await _sent(fake, 1)
    assert answer["chat_id"] == 111

    # An hour later, at the terminal (another process: its own runtime on the same home).
    window = await ask_then_set_a_reminder_at_the_terminal(
        gateway.lore.config, clock, "leave for the airport"
    )
    assert window == [
        "Мой рейс CI-100 в четверг в 7:00, 周四早上七点",
        "Записал. 记下了。",
        "when is my flight?",
    ]
    [reminder] = gateway.lore.reminders.list(OWNER_SCOPE)
    assert (reminder.text, reminder.channel) == ("leave for the airport", "cli")

    # The owner last wrote in the terminal, which is closed now: `lore serve` pushes it
    # to Telegram, once.
    scheduler = gateway.scheduler()
    later = clock.now() + timedelta(minutes=11)
    assert len(await scheduler.run_once(later)) == 1
    assert await scheduler.run_once(later + timedelta(minutes=5)) == []
    sent = await _sent(fake, 2)
    assert (sent[1]["chat_id"], sent[1]["text"]) == (111, "⏰ leave for the airport")
    assert len(await _sent(fake, 3, wait=1)) == 2
    session = gateway.lore.session(OWNER_SCOPE).messages
    assert sum(1 for m in session if m.get("reminder_id") == reminder.id) == 1
    assert gateway.lore.sessions.live_meta("telegram:111") is None
    assert gateway.lore.sessions.live_meta("cli:default") is None


async def test_turns_from_telegram_and_the_terminal_take_turns_in_the_owners_queue(
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider
) -> None:
    model.reply("first answer", delay=0.2).reply("second answer")
    shown: list[Event] = []
    terminal = gateway.lore.conversation(
        gateway.lore.config.conversation_scope("cli:default"), emit=shown.append
    )
    fake.say("first, from Telegram", chat=TG_OWNER_CHAT, sender=TG_OWNER)
    for _ in range(1000):  # until the Telegram turn holds the owner's queue
        if gateway.lore.bus.busy(OWNER_SCOPE):
            break
        await asyncio.sleep(0.01)
    outcome = await terminal.send("second, from the terminal")
    assert outcome.text == "second answer"
    second = [m["content"] for m in model.requests[1].messages]
    assert second == ["first, from Telegram", "first answer", "second, from the terminal"]
    channels = [m.get("channel", "cli") for m in terminal.session.messages if m["role"] == "user"]
    assert channels == ["telegram", "cli"]


@pytest.mark.parametrize("gateway", ["telegram"], indirect=True)
async def test_a_reminder_goes_to_the_chosen_channel_even_while_a_terminal_shows_the_conversation(
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider, clock: FixedClock
) -> None:
    lore = gateway.lore
    shown: list[Event] = []
    model.tool_call("set_reminder", {"text": "stretch", "when": "in 10 minutes"}).reply("OK.")
    await lore.conversation(OWNER_SCOPE, emit=shown.append).send("remind me to stretch")
    later = clock.now() + timedelta(minutes=11)
    with lore.sessions.attach(OWNER_SCOPE) as attached:
        assert attached
        terminal = Scheduler(
            lore.reminders,
            lore.clock,
            session_delivery(lore.sessions, lambda scope: shown.append),
            scope=OWNER_SCOPE,
            accepts=lambda scope: terminal_delivers(lore, scope),
        )
        assert await terminal.run_once(later) == []  # the terminal leaves it to Telegram
        assert len(await gateway.scheduler().run_once(later)) == 1
    [push] = await _sent(fake, 1)
    assert (push["chat_id"], push["text"]) == (111, "⏰ stretch")
    assert not any(isinstance(e, ReminderDue) for e in shown)


async def test_the_open_terminal_delivers_when_the_owner_last_wrote_there(
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider, clock: FixedClock
) -> None:
    lore = gateway.lore
    shown: list[Event] = []
    model.tool_call("set_reminder", {"text": "tea", "when": "in 10 minutes"}).reply("OK.")
    await lore.conversation(OWNER_SCOPE, emit=shown.append).send("remind me: tea")
    assert reminder_channel(lore.config, lore.session(OWNER_SCOPE)) == "cli"
    later = clock.now() + timedelta(minutes=11)
    with lore.sessions.attach(OWNER_SCOPE):
        assert await gateway.scheduler().run_once(later) == []  # the terminal's to deliver
        terminal = Scheduler(
            lore.reminders,
            lore.clock,
            session_delivery(lore.sessions, lambda scope: shown.append),
            scope=OWNER_SCOPE,
            accepts=lambda scope: terminal_delivers(lore, scope),
        )
        assert len(await terminal.run_once(later)) == 1
    [due] = [e for e in shown if isinstance(e, ReminderDue)]
    assert due.text.endswith("tea")
    assert await _sent(fake, 1, wait=0.5) == []


async def test_groups_and_other_peoples_chats_stay_their_own_conversations(
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider
) -> None:
    config = gateway.lore.config
    assert config.conversation_scope("telegram:-1001") == "telegram:-1001"
    assert config.conversation_scope("telegram:222") == "telegram:222"
    assert config.conversation_scope("cli:work") == "cli:work"
    assert config.conversation_scope("line:user:U111") == "line:user:U111"  # not the owner's
    assert (
        replace(config, owner_scopes=("line:user:U111",)).conversation_scope("line:user:U111")
        == OWNER_SCOPE
    )
    model.reply("Hi Mom.")
    fake.say(f"@{BOT_USERNAME} hello", chat=FAMILY, sender=MOM)
    await _sent(fake, 1)
    assert len(gateway.lore.session("telegram:-1001").messages) == 2
    assert gateway.lore.sessions.live_meta(OWNER_SCOPE) is None


def test_off_by_default_each_channel_keeps_its_own_conversation(config: Config) -> None:
    assert not config.channels.unified_owner_session
    assert config.conversation_scope("cli:default") == "cli:default"
    assert Clients("t", config).identify("t").default_scope == "api:default"


def test_the_cli_and_the_web_page_default_to_the_owners_conversation(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[telegram]\nowner_ids = ["111"]\n\n[channels]\nunified_owner_session = true\n',
        encoding="utf-8",
    )
    assert main(["remind", "add", "water the plants", "--when", "in 2 hours", "--json"]) == 0
    assert '"scope": "owner"' in capsys.readouterr().out
    assert main(["memory", "add", "I take the train on Mondays"]) == 0
    capsys.readouterr()
    assert main(["memory", "list", "--scope", "telegram:111"]) == 0  # the same conversation
    assert "I take the train on Mondays" in capsys.readouterr().out
    from lore.config import load_config

    config = load_config(env={"LORE_HOME": str(home)})
    assert Clients("t", config).identify("t").default_scope == OWNER_SCOPE
    assert config.is_owner_scope(OWNER_SCOPE)


def test_a_reminder_channel_lore_does_not_know_is_refused(home: Path) -> None:
    from lore.config import load_config
    from lore.errors import ConfigError

    with pytest.raises(ConfigError, match="reminder_channel"):
        load_config(env={"LORE_HOME": str(home)}, flags={"channels.reminder_channel": "fax"})


async def test_a_terminal_and_lore_serve_in_two_processes_take_turns_in_the_owners_conversation(
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider, clock: FixedClock
) -> None:
    terminal_model = ScriptedProvider()
    terminal = build(gateway.lore.config, provider=terminal_model, clock=clock)
    model.reply("The train leaves at 8.", delay=0.3)
    terminal_model.reply("Yes, 8 o'clock.")
    fake.say("when does my train leave? / 火车几点？", chat=TG_OWNER_CHAT, sender=TG_OWNER)
    for _ in range(1000):  # until the Telegram turn is under way in the gateway
        if model.requests:
            break
        await asyncio.sleep(0.01)
    shown: list[Event] = []
    outcome = await terminal.conversation(OWNER_SCOPE, emit=shown.append).send("at 8, right?")
    await terminal.aclose()
    assert outcome.text == "Yes, 8 o'clock."
    window = [m["content"] for m in terminal_model.requests[0].messages]
    assert window == [
        "when does my train leave? / 火车几点？",
        "The train leaves at 8.",
        "at 8, right?",
    ]


async def test_the_owners_chat_on_the_web_page_joins_the_same_conversation(
    gateway: Gateway, fake: FakeTelegram, model: ScriptedProvider
) -> None:
    lore = gateway.lore
    model.reply("Noted.")
    fake.say("the dentist is on Friday / стоматолог в пятницу", chat=TG_OWNER_CHAT, sender=TG_OWNER)
    await _sent(fake, 1)
    model.reply("Friday.")
    async with gateway_in_loop(lore) as url:
        headers = {"Authorization": f"Bearer {OWNER_TOKEN}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
            body = {"model": "lore", "messages": [{"role": "user", "content": "when?"}]}
            reply = await http.post("/v1/chat/completions", json=body)
            page = await http.get("/")
    assert reply.status_code == 200 and reply.headers["X-Lore-Session"] == OWNER_SCOPE
    window = [m["content"] for m in model.requests[-1].messages]
    assert window == ["the dentist is on Friday / стоматолог в пятницу", "Noted.", "when?"]
    assert page.status_code == 200 and 'data-scope="owner"' in page.text  # the page's chat
