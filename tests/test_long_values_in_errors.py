"""A refused value is quoted in its error by its first 40 characters and its length, never
whole: a 1 MB reminder time, a 10 KB recurrence, session id or memory number answer in one
short line, over the REST API and on the command line, and nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.cli import main
from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway

MEGABYTE = "tomorrow at 9 " + "x" * 1_000_000
TEN_KB = "7" * 10_000


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _short(message: str) -> None:
    assert len(message) < 300 and "\n" not in message, message[:400]
    assert "characters)" in message and "…" in message


@pytest.mark.parametrize(
    "fields",
    [{"when": MEGABYTE}, {"when": "in " + TEN_KB + " minutes"}, {"recurrence": "every " + TEN_KB}],
    ids=["1 MB when", "10 KB number", "10 KB recurrence"],
)
def test_a_huge_reminder_time_is_refused_in_one_short_line(
    gateway: Gateway, fields: dict[str, str]
) -> None:
    with gateway.client() as http:
        reply = http.post("/api/reminders", json={"text": "water the plants", **fields})
        assert reply.status_code == 400
        _short(reply.json()["error"]["message"])
        assert http.get("/api/reminders").json()["reminders"] == []


def test_a_long_key_named_with_a_project_is_quoted_briefly(gateway: Gateway) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "project": "garden"}
    headers = {"X-Lore-Session": "api:" + "q" * 190}
    with gateway.client() as http:
        reply = http.post("/v1/chat/completions", json=body, headers=headers)
    assert reply.status_code == 400
    _short(reply.json()["error"]["message"])


@pytest.fixture
def _offline_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_MODEL", "scripted")
    monkeypatch.setenv("LORE_USER", "john")


@pytest.mark.usefixtures("_offline_model")
@pytest.mark.parametrize(
    "argv",
    [
        ["remind", "add", "water the plants", "--when", MEGABYTE],
        ["remind", "add", "water the plants", "--every", "every " + TEN_KB],
        ["remind", "cancel", "#" + TEN_KB + "x"],
        ["memory", "add", "John lives in Hualien", "--expires", TEN_KB],
        ["memory", "forget", TEN_KB + "x"],
        ["sessions", "show", "f" * 10_000],
        ["sessions", "list", "--limit", TEN_KB + "x"],
    ],
    ids=["when", "every", "cancel", "expires", "forget", "sessions show", "limit"],
)
def test_a_long_value_on_the_command_line_is_quoted_briefly(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    assert err.count("\n") == 1
    _short(err.strip())
