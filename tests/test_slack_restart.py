"""What Slack's channel keeps across a restart of `lore serve`: an event recorded and
acknowledged but whose turn a crash cut short is answered by the next process, once; an
event Slack sends again after the restart is not; forget everywhere reaches an event not
yet answered. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace

import pytest

from lore.channels.chat_inbox import LEASE_SECONDS
from lore.channels.slack import SlackChannel
from lore.channels.slack_api import SlackApi
from lore.clock import FixedClock
from lore.config import Config
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime, build
from tests.postgres_server import storage  # noqa: F401  (local and PostgreSQL)
from tests.slack_server import Events, FakeSlack, no_wait, slack_settings

JOHN = "U061F7AUR"
JOHN_DM = "D0PNCRP9N"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        server.users.update({JOHN: "John"})
        yield server


def _slack(config: Config, fake: FakeSlack) -> Config:
    return replace(config, slack=slack_settings(fake, owner_ids=(JOHN,)))


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


@asynccontextmanager
async def _slack_channel(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, SlackChannel]]:
    """Slack without the socket or the gateway: what both call, called directly."""
    lore = build(config, provider=model, clock=clock)
    channel = SlackChannel(lore, config.slack, api=SlackApi(config.slack, sleep=no_wait))
    try:
        await channel._know_myself()
        yield lore, channel
    finally:
        await channel.aclose()
        await lore.aclose()


async def _crash(channel: SlackChannel) -> None:
    """The process dies: its work in hand stops where it is (nothing after it runs)."""
    for task in list(channel._tasks):
        task.cancel()
    await asyncio.gather(*channel._tasks, return_exceptions=True)


async def test_a_crash_after_the_ack_loses_no_message_and_slacks_retry_is_not_answered_twice(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    settings = _slack(config, fake)
    envelope = Events(fake).message(
        "记得明天带护照 / не забудь паспорт", user=JOHN, channel=JOHN_DM
    )
    async with _slack_channel(settings, model, clock) as (lore, channel):
        assert channel.accept(envelope)  # recorded: the ack goes out
        await _crash(channel)  # before the turn began
        assert lore.session(f"slack:{JOHN}").messages == []
    assert fake.sent == [] and model.requests == []
    clock.advance(seconds=LEASE_SECONDS + 1)
    model.default = _echo
    async with _slack_channel(settings, model, clock) as (lore, channel):
        assert not channel.accept(envelope)  # Slack's retry after the restart: dropped
        [left] = channel.inbox.sweep()
        await channel.resume(left)
        await channel.drain()
        assert channel.inbox.sweep() == []  # handled: never again
        assert not channel.accept(envelope)
        said = [m["content"] for m in lore.session(f"slack:{JOHN}").messages]
    assert [s["text"] for s in fake.sent] == ["re: 记得明天带护照 / не забудь паспорт"]
    assert said == ["记得明天带护照 / не забудь паспорт", "re: 记得明天带护照 / не забудь паспорт"]


async def test_forget_everywhere_reaches_a_slack_message_not_yet_answered(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeSlack,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lore.cli import main

    settings = _slack(config, fake)
    envelope = Events(fake).message("my locker code is Шифр-4471", user=JOHN, channel=JOHN_DM)
    async with _slack_channel(settings, model, clock) as (_, channel):
        assert channel.accept(envelope)
        await _crash(channel)
    if config.database_url:
        monkeypatch.setenv("LORE_DATABASE_URL", config.database_url)
    where = "PostgreSQL" if config.database_url else "lore.db"
    assert main(["forget", "--everywhere", "--phrase", "шифр-4471"]) == 0
    assert f"{where}: 1 chat message not yet answered" in capsys.readouterr().out
    assert main(["forget", "--everywhere", "--phrase", "шифр-4471", "--yes"]) == 0
    if not config.database_url:
        assert "Шифр-4471".encode() not in (config.home / "lore.db").read_bytes()
    clock.advance(seconds=LEASE_SECONDS + 1)
    model.default = _echo
    async with _slack_channel(settings, model, clock) as (lore, channel):
        assert not channel.accept(envelope)  # its key is kept: still a duplicate
        [left] = channel.inbox.sweep()
        await channel.resume(left)
        await channel.drain()
        said = [m["content"] for m in lore.session(f"slack:{JOHN}").messages]
    assert said[0] == "my locker code is [forgotten]"
    assert [s["text"] for s in fake.sent] == ["re: my locker code is [forgotten]"]
