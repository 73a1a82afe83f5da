"""`lore chat -m` as a script would use it, against a real local HTTP server (run in
this process, as tests/lore_command.py describes)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lore_command import lore_text
from tests.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _lore(
    home: Path, server: FakeOpenAI, *args: str, extraction: bool = False
) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    # Extraction is a second model call per turn; most tests here count requests.
    (home / "config.toml").write_text(f"[extraction]\nenabled = {str(extraction).lower()}\n")
    env = dict(
        LORE_HOME=str(home),
        OPENAI_API_KEY="sk-test-key",
        OPENAI_BASE_URL=server.base_url,
        LORE_MODEL="openai/gpt-4o-mini",
        LORE_TIMEZONE="Europe/Moscow",
        LORE_USER="anna",
    )
    return lore_text("chat", *args, env=env)


def test_one_shot_prints_only_the_reply(home: Path, server: FakeOpenAI) -> None:
    server.reply("Привет, Анна!")
    done = _lore(home, server, "-m", "Привет")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Привет, Анна!\n"
    request = server.requests[0]
    assert request["model"] == "gpt-4o-mini" and request["stream"] is True
    assert request["messages"][-1] == {"role": "user", "content": "Привет"}
    assert server.headers[0]["authorization"] == "Bearer sk-test-key"


def test_second_run_sends_the_first_turn_as_history(home: Path, server: FakeOpenAI) -> None:
    server.reply("Nice to meet you.").reply("You are Anna.")
    assert _lore(home, server, "-m", "I am Anna").returncode == 0
    assert _lore(home, server, "-m", "Who am I?").stdout == "You are Anna.\n"
    contents = [m["content"] for m in server.requests[1]["messages"]]
    assert contents[1:] == ["I am Anna", "Nice to meet you.", "Who am I?"]


def test_request_carries_todays_date_and_soul_edits_apply_at_once(
    home: Path, server: FakeOpenAI
) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    server.reply("one").reply("two")
    assert _lore(home, server, "-m", "hi").returncode == 0
    system = server.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert datetime.now(ZoneInfo("Europe/Moscow")).strftime("%Y-%m-%d") in system["content"]
    (home / "workspace" / "SOUL.md").write_text("Always answer in haiku.\n")
    assert _lore(home, server, "-m", "hi again").returncode == 0
    assert "Always answer in haiku." in server.requests[1]["messages"][0]["content"]


def test_503_then_success_is_retried_into_one_clean_reply(home: Path, server: FakeOpenAI) -> None:
    server.error(503, "overloaded", {"retry-after": "0"}).reply("All good.")
    done = _lore(home, server, "-m", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "All good.\n"
    assert len(server.requests) == 2


def test_401_gives_one_clear_line_and_exit_1(home: Path, server: FakeOpenAI) -> None:
    server.error(401, "Incorrect API key provided")
    done = _lore(home, server, "-m", "hello")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "401" in done.stderr
    assert "Traceback" not in done.stderr


def test_unknown_tool_call_gets_an_error_result_and_the_turn_finishes(
    home: Path, server: FakeOpenAI
) -> None:
    server.tool_call("teleport", {"to": "Mars"}).reply("I can't teleport.")
    done = _lore(home, server, "-m", "teleport me")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("I can't teleport.\n")
    tool_result = server.requests[1]["messages"][-1]
    assert tool_result["role"] == "tool" and "unknown tool 'teleport'" in tool_result["content"]


def test_slash_commands_work_in_one_shot_mode(home: Path, server: FakeOpenAI) -> None:
    done = _lore(home, server, "-m", "/hepl")
    assert done.returncode == 1
    assert done.stderr == "lore: Unknown command /hepl — did you mean /help?\n"
    assert server.requests == []
    helped = _lore(home, server, "-m", "/help")
    assert helped.returncode == 0 and "/status" in helped.stdout


def test_missing_api_key_is_one_line(home: Path, server: FakeOpenAI) -> None:
    env = {"LORE_HOME": str(home), "LORE_MODEL": "openai/gpt-4o-mini"}
    done = lore_text("chat", "-m", "hi", env=env)
    assert done.returncode == 1
    assert done.stderr.startswith("lore: OPENAI_API_KEY is not set")
    assert done.stderr.count("\n") == 1
