"""A task scheduled in a Telegram chat is delivered once across a kill -9 of `lore serve`:
the first process is killed while the task's turn runs; the next one takes the run over
at once, runs the turn (the scripted model answers), and Telegram gets the reply once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lore.cli import main
from tests.scripted_serve import SCHEDULED, TASK_PROMPT, TASK_REPLY
from tests.telegram_server import FakeTelegram

OWNER = {"id": 111, "is_bot": False, "first_name": "John"}
OWNER_CHAT = {"id": 111, "type": "private", "first_name": "John"}
ROOT = Path(__file__).resolve().parent.parent


def _wait(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _serve(env: dict[str, str], delay: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.scripted_serve", str(delay)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_task_set_in_telegram_is_delivered_once_across_a_kill_9_of_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    session = home / "sessions" / "telegram%3A111.jsonl"
    with FakeTelegram() as telegram:
        (home / "config.toml").write_text(
            "[extraction]\nenabled = false\n\n[reminders]\npoll_seconds = 0.5\n\n"
            f'[telegram]\ntoken = "123:TEST"\nbase_url = "{telegram.base_url}"\n'
            'owner_ids = ["111"]\npoll_seconds = 1\n',
            encoding="utf-8",
        )
        env = {**os.environ, "LORE_HOME": str(home), "LORE_MODEL": "scripted",
               "LORE_TIMEZONE": "Asia/Taipei", "LORE_USER": "john"}  # fmt: skip
        first = _serve(env, delay=120)  # killed while the task's turn waits for the model
        try:
            assert _wait(lambda: "getUpdates" in telegram.calls), "serve did not poll"
            telegram.say("每天看看花莲的天气，要带伞就告诉我", chat=OWNER_CHAT, sender=OWNER)
            assert [s["text"] for s in telegram.wait_sent(1)] == [SCHEDULED]
            assert _wait(lambda: "(scheduled task #1)" in session.read_text("utf-8"))
        finally:
            os.kill(first.pid, signal.SIGKILL)
            first.communicate(timeout=30)
        assert len(telegram.sent) == 1

        second = _serve(env, delay=0)
        try:
            sent = telegram.wait_sent(2)
            assert [s["text"] for s in sent] == [SCHEDULED, f"🗓 {TASK_REPLY}"]
            assert sent[1]["chat_id"] == 111
            assert len(telegram.wait_sent(3, timeout=3)) == 2  # once
        finally:
            second.send_signal(signal.SIGTERM)
            out, _ = second.communicate(timeout=30)
    assert "delivered task #1 to telegram:111" in out
    transcript = session.read_text("utf-8")
    assert transcript.count(TASK_REPLY) == 1
    assert TASK_PROMPT in transcript
    monkeypatch.setenv("LORE_HOME", str(home))
    capsys.readouterr()
    assert main(["tasks", "list", "--all", "--json", "--session", "telegram:111"]) == 0
    [task] = json.loads(capsys.readouterr().out)
    assert (task["status"], task["last_status"], task["channel"]) == (
        "finished",
        "done",
        "telegram",
    )
