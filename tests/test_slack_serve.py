"""`lore serve` with Slack set up: it says in one line how Slack is connected, answers a
DM that came over Socket Mode, and takes signed Events API calls at /slack/events on
its gateway (a forged one gets 401). A real process, the fake Slack and the fake OpenAI
API on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.channels.slack_events import sign
from tests import crash_runs
from tests.openai_server import FakeOpenAI
from tests.serve_process import READY, ServeProcess, free_port
from tests.slack_server import (
    APP_TOKEN,
    BOT_TOKEN,
    SIGNING_SECRET,
    Events,
    FakeSlack,
)

JOHN = "U061F7AUR"
JOHN_DM = "D0PNCRP9N"


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        server.users.update({JOHN: "John"})
        server.dms.update({JOHN: JOHN_DM})
        yield server


def _post(port: int, payload: dict[str, object], secret: str) -> httpx.Response:
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sign(secret, body, stamp),
    }
    return httpx.post(f"http://127.0.0.1:{port}/slack/events", content=body, headers=headers)


def test_lore_serve_connects_slack_both_ways_and_answers(
    tmp_path: Path, openai: FakeOpenAI, slack: FakeSlack
) -> None:
    home = tmp_path / "home"
    crash_runs.prepare(home)
    with (home / "config.toml").open("a", encoding="utf-8") as config:
        config.write(f'[slack]\nowner_ids = ["{JOHN}"]\napi_base_url = "{slack.base_url}"\n')
    env = crash_runs.environment(home, openai)
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET=SIGNING_SECRET
    )
    port = free_port()
    serve = ServeProcess(env, port=port)
    try:
        serve.start().wait_for(READY)
        both = "Socket Mode and Events API at /slack/events"
        serve.wait_for(f"lore serve: chat channels connected: slack ({both})")
        slack.wait(lambda: slack.connections > 0)
        openai.reply("Доброе утро, John!")
        openai.reply("早安!")
        events = Events(slack)
        slack.push(events.message("доброе утро", user=JOHN, channel=JOHN_DM))
        [first] = slack.wait_sent(1)
        posted = _post(port, events.message("早安", user=JOHN, channel=JOHN_DM), SIGNING_SECRET)
        forged = _post(port, events.message("早安", user=JOHN, channel=JOHN_DM), "forged")
        sent = slack.wait_sent(2)
        serve.send(signal.SIGTERM)
        assert serve.wait() == 0
    finally:
        serve.stop()
    assert (first["channel"], first["text"]) == (JOHN_DM, "Доброе утро, John!")
    assert (posted.status_code, forged.status_code) == (200, 401)
    assert [s["text"] for s in sent] == ["Доброе утро, John!", "早安!"]
    assert slack.all_acked()
