"""`lore serve` with a Discord token: a real process starts the bot, which connects to a
fake Discord on 127.0.0.1 and answers the owner's DM; SIGTERM stops it cleanly."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import crash_runs
from tests.discord_server import FakeDiscord, user
from tests.openai_server import FakeOpenAI
from tests.serve_process import READY, ServeProcess, free_port

JOHN = user("100000000000000001", "John")


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def test_lore_serve_starts_the_discord_bot_and_it_answers_a_dm(
    tmp_path: Path, openai: FakeOpenAI
) -> None:
    home = tmp_path / "home"
    with FakeDiscord({"810000000000000001": "family"}) as fake:
        crash_runs.prepare(home)
        with (home / "config.toml").open("a", encoding="utf-8") as config:
            config.write(
                f'[discord]\napi_base_url = "{fake.api_base_url}"\nowner_ids = ["{JOHN["id"]}"]\n'
            )
        env = crash_runs.environment(home, openai)
        env["DISCORD_BOT_TOKEN"] = "TEST.TOKEN.discord"
        serve = ServeProcess(env, port=free_port())
        try:
            serve.start().wait_for(READY)
            serve.wait_for("lore serve: Discord connecting (gateway)")
            assert fake.wait_for(lambda: fake.identifies, timeout=30)
            openai.reply("Привет, John!")
            fake.say("hi 你好", channel="700000000000000001", author=JOHN, guild=False)
            [answer] = fake.wait_sent(1, timeout=30)
            assert answer["content"] == "Привет, John!"
            serve.send(signal.SIGTERM)
            assert serve.wait() == 0
        finally:
            serve.stop()
