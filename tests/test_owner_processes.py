"""One owner, many channels, as real processes: `lore serve` polling the fake Bot API, and
`lore chat -m` in another process, sharing the owner's conversation through the files;
the reminder set in the terminal comes to the owner's Telegram chat, once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.openai_server import FakeOpenAI
from tests.telegram_server import FakeTelegram

OWNER = {"id": 111, "is_bot": False, "first_name": "John"}
OWNER_CHAT = {"id": 111, "type": "private", "first_name": "John"}
LORE = [sys.executable, "-m", "lore"]


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_the_terminal_sees_the_telegram_chat_and_its_reminder_reaches_telegram_once(
    tmp_path: Path, openai: FakeOpenAI
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with FakeTelegram() as telegram:
        (home / "config.toml").write_text(
            "[extraction]\nenabled = false\n\n"
            "[reminders]\npoll_seconds = 0.5\n\n"
            f'[telegram]\ntoken = "123:TEST"\nbase_url = "{telegram.base_url}"\n'
            'owner_ids = ["111"]\npoll_seconds = 1\n\n'
            "[channels]\nunified_owner_session = true\n",
            encoding="utf-8",
        )
        env = {
            **os.environ,
            "LORE_HOME": str(home),
            "LORE_MODEL": "openai/gpt-4o-mini",
            "OPENAI_API_KEY": "sk-test-unused",
            "OPENAI_BASE_URL": openai.base_url,
            "LORE_TIMEZONE": "UTC",
            "LORE_USER": "john",
        }
        serve = subprocess.Popen(
            [*LORE, "serve", "--port", str(_free_port())],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert _wait(lambda: "getUpdates" in telegram.calls), "serve did not poll"
            openai.reply("Записал. 记下了。")
            telegram.say("Мой рейс CI-100 в четверг в 7:00", chat=OWNER_CHAT, sender=OWNER)
            assert len(telegram.wait_sent(1)) == 1

            openai.reply("Thursday at 7:00.")
            chat = subprocess.run(
                [*LORE, "chat", "-m", "when is my flight?"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert chat.returncode == 0, chat.stderr
            assert chat.stdout.strip() == "Thursday at 7:00."
            said = [m["content"] for m in openai.requests[-1]["messages"][1:]]
            assert said[:2] == ["Мой рейс CI-100 в четверг в 7:00", "Записал. 记下了。"]
            assert "when is my flight?" in said[2]

            due = (datetime.now(UTC) + timedelta(seconds=2)).isoformat(timespec="seconds")
            openai.tool_call("set_reminder", {"text": "leave for the airport", "when": due})
            openai.reply("I'll remind you.")
            chat = subprocess.run(
                [*LORE, "chat", "-m", "remind me to leave for the airport"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert chat.returncode == 0, chat.stderr
            sent = telegram.wait_sent(2)
            assert [(s["chat_id"], s["text"]) for s in sent[1:]] == [
                (111, "⏰ leave for the airport")
            ]
            assert len(telegram.wait_sent(3, timeout=2)) == 2  # once
        finally:
            serve.send_signal(signal.SIGINT)
            out, _ = serve.communicate(timeout=30)
    assert "delivered reminder #1 to owner" in out
    assert not (home / "sessions" / "telegram%3A111.jsonl").exists()
