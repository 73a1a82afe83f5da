"""One owner, many channels, with LINE: with `channels.unified_owner_session` the owner's
LINE 1:1 chat, Telegram and the terminal are one conversation (scope `owner`), and a
reminder set anywhere reaches the owner's LINE chat by push, once. LINE is the fake
Messaging API on 127.0.0.1 behind the real gateway, Telegram the fake Bot API, the
terminal a second runtime on the same home (as a second process would be)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lore.channels.owner import owner_reminders
from lore.channels.telegram import TelegramChannel
from lore.cli import main
from lore.clock import FixedClock
from lore.config import OWNER_SCOPE, ChannelsConfig, Config, TelegramConfig
from lore.llm.scripted import ScriptedProvider, Step
from lore.reminders.scheduler import Deliver
from tests.line_server import SECRET, TOKEN, FakeLine, line_gateway, line_settings
from tests.line_server import LineGateway as Line
from tests.owner_scenario import (
    FAMILY,
    JOHN,
    MOM,
    TG_OWNER,
    TG_OWNER_CHAT,
    ask_then_set_a_reminder_at_the_terminal,
    serve_scheduler,
)
from tests.telegram_server import FakeTelegram

EVE = "U9999999999999999999999999999999e"


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine() as server:
        server.profiles.update({JOHN: "John", MOM: "Mom 媽媽", EVE: "Eve"})
        yield server


def unified(config: Config, fake: FakeLine, reminder_channel: str = "", **line: Any) -> Config:
    channels = ChannelsConfig(unified_owner_session=True, reminder_channel=reminder_channel)
    settings = line_settings(fake, owner_ids=(JOHN,), **line)
    return replace(config, line=settings, channels=channels)


@pytest.fixture
async def line(
    request: pytest.FixtureRequest,
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeLine,
) -> AsyncIterator[Line]:
    """The gateway with LINE, wired for reminders as `lore serve` wires it."""
    settings = unified(config, fake, getattr(request, "param", ""), allow=(EVE,))
    async with line_gateway(settings, model, clock, fake) as running:
        pushers: dict[str, Deliver] = {"line": running.channel.deliver}
        with (
            running.lore.bus.deliver_for("line", running.channel.deliver),
            running.lore.bus.deliver_to(OWNER_SCOPE, owner_reminders(running.lore, pushers)),
        ):
            yield running


def _texts(sent: dict[str, Any]) -> list[str]:
    return [m["text"] for m in sent["messages"]]


@pytest.mark.parametrize("line", ["line"], indirect=True)
async def test_what_the_owner_said_on_line_is_in_the_terminals_window_and_a_reminder_set_there_reaches_line_once(  # noqa: E501
    line: Line, model: ScriptedProvider, clock: FixedClock
) -> None:
    model.reply("記下了。Записал.")
    await line.say("我的航班 CI-100 週四 7:00 / мой рейс в четверг", user=JOHN)
    [answer] = await line.sent(1)
    assert (answer["kind"], answer["to"]) == ("reply", JOHN)
    said = line.lore.session(OWNER_SCOPE).messages[0]
    assert (said["channel"], said["author"], said["author_id"]) == ("line", "John", JOHN)
    assert line.lore.sessions.live_meta(f"line:user:{JOHN}") is None

    # Later, at the terminal (another process: its own runtime on the same home).
    window = await ask_then_set_a_reminder_at_the_terminal(
        line.lore.config, clock, "leave for the airport 🛫 {gate B}"
    )
    assert window == [
        "我的航班 CI-100 週四 7:00 / мой рейс в четверг",
        "記下了。Записал.",
        "when is my flight?",
    ]
    [reminder] = line.lore.reminders.list(OWNER_SCOPE)

    # Reminders go to LINE (the setting): pushed to the owner's own chat, once, as plain
    # text (a 1:1 chat needs no mention).
    later = clock.now() + timedelta(minutes=11)
    assert len(await serve_scheduler(line.lore).run_once(later)) == 1
    assert await serve_scheduler(line.lore).run_once(later + timedelta(minutes=5)) == []
    push = (await line.sent(2))[1]
    assert (push["kind"], push["to"]) == ("push", JOHN) and push["retry_key"]
    [message] = push["messages"]
    assert message == {"type": "text", "text": "⏰ leave for the airport 🛫 {gate B}"}
    assert len(line.fake.wait_sent(3, timeout=1)) == 2
    session = line.lore.session(OWNER_SCOPE).messages
    assert sum(1 for m in session if m.get("reminder_id") == reminder.id) == 1


async def test_a_reminder_goes_to_line_when_the_owner_last_wrote_there(
    line: Line, model: ScriptedProvider, clock: FixedClock
) -> None:
    model.tool_call("set_reminder", {"text": "喝水 / выпей воды", "when": "in 10 minutes"})
    model.reply("OK.")
    await line.say("remind me to drink water in 10 minutes", user=JOHN)
    await line.sent(1)
    [reminder] = line.lore.reminders.list(OWNER_SCOPE)
    assert reminder.channel == "line"
    later = clock.now() + timedelta(minutes=11)
    assert len(await serve_scheduler(line.lore).run_once(later)) == 1
    push = (await line.sent(2))[1]
    assert (push["kind"], push["to"], _texts(push)) == ("push", JOHN, ["⏰ 喝水 / выпей воды"])


async def test_a_family_group_and_other_peoples_chats_stay_their_own_conversations(
    line: Line, model: ScriptedProvider, fake: FakeLine
) -> None:
    model.default = lambda request: Step(text=f"re: {request.messages[-1]['content']}")
    await line.say("@Lore the dentist is on Friday", user=JOHN, group=FAMILY, mention_bot=True)
    await line.say("hi, I'm Eve", user=EVE)  # on the allow list: a guest, in her own chat
    await line.say("hello", user=MOM)  # a stranger: refused, nothing kept
    await line.sent(3)
    await line.channel.drain()
    group = line.lore.session(f"line:group:{FAMILY}").messages
    assert [m["content"] for m in group] == [
        "the dentist is on Friday",
        "re: the dentist is on Friday",
    ]
    assert [m["content"] for m in line.lore.session(f"line:user:{EVE}").messages] == [
        "hi, I'm Eve",
        "re: hi, I'm Eve",
    ]
    assert line.lore.session(f"line:user:{MOM}").messages == []
    assert line.lore.sessions.live_meta(OWNER_SCOPE) is None
    config = line.lore.config
    assert config.conversation_scope(f"line:user:{JOHN}") == OWNER_SCOPE
    assert config.conversation_scope(f"line:user:{EVE}") == f"line:user:{EVE}"
    assert config.conversation_scope(f"line:group:{FAMILY}") == f"line:group:{FAMILY}"


async def test_telegram_and_line_are_one_conversation_for_the_owner(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    with FakeTelegram() as telegram_api:
        settings = unified(config, fake)
        settings = replace(
            settings,
            telegram=TelegramConfig(
                token="123:TEST",
                base_url=telegram_api.base_url,
                owner_ids=("111",),
                poll_seconds=1,
            ),  # fmt: skip
        )
        async with line_gateway(settings, model, clock, fake) as line:
            telegram = TelegramChannel(line.lore, settings.telegram)
            polling = asyncio.create_task(telegram.run_forever())
            try:
                model.reply("Записал: пятница.")
                telegram_api.say("стоматолог в пятницу", chat=TG_OWNER_CHAT, sender=TG_OWNER)
                await asyncio.to_thread(telegram_api.wait_sent, 1)
                model.reply("Friday, as you said on Telegram.")
                await line.say("牙醫是哪天？ when is the dentist?", user=JOHN)
                [answer] = await line.sent(1)
            finally:
                telegram.stop()
                await asyncio.wait_for(polling, timeout=15)
    assert _texts(answer) == ["Friday, as you said on Telegram."]
    window = [m["content"] for m in model.requests[1].messages]
    assert window == [
        "стоматолог в пятницу",
        "Записал: пятница.",
        "牙醫是哪天？ when is the dentist?",
    ]


def test_lore_serve_once_pushes_the_owners_reminder_to_line(
    home: Path,
    fake: FakeLine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from datetime import UTC, datetime

    from lore.backends.local.database import Database
    from lore.backends.local.reminders import SQLiteReminderStore

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[line]\napi_base_url = "{fake.base_url}"\nowner_ids = ["{JOHN}"]\n\n'
        '[channels]\nunified_owner_session = true\nreminder_channel = "line"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("LINE_CHANNEL_SECRET", SECRET)
    monkeypatch.setenv("LINE_CHANNEL_ACCESS_TOKEN", TOKEN)
    now = datetime.now(UTC)
    db = Database(home / "lore.db")
    due, made = now - timedelta(minutes=1), now - timedelta(minutes=10)
    SQLiteReminderStore(db).add(OWNER_SCOPE, "John", "倒垃圾 🗑️", due,
                                timezone="Asia/Taipei", now=made)  # fmt: skip
    db.close()
    assert main(["serve", "--once"]) == 0
    assert main(["serve", "--once"]) == 0
    [push] = fake.sent
    assert (push["kind"], push["to"], _texts(push)) == ("push", JOHN, ["⏰ 倒垃圾 🗑️"])
    assert f"delivered reminder #1 to {OWNER_SCOPE}" in capsys.readouterr().out
