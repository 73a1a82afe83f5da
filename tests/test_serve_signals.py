"""`lore serve` as a service manager drives it: SIGTERM finishes the reply in flight,
prints the stop line and exits 0; SIGHUP reads config.toml again, applies what is read
where it is used, names what needs a restart, and survives a file that does not load."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lore.config import Config, load_config
from lore.config_reload import reload_settings
from lore.daemon import Daemon
from lore.events import Inbound, TextDelta
from lore.llm.base import ChatRequest, Completion, StreamEvent, TextChunk
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests import crash_runs
from tests.openai_server import FakeOpenAI
from tests.serve_process import READY, ServeProcess, free_port


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def serve(tmp_path: Path, server: FakeOpenAI) -> Iterator[ServeProcess]:
    home = tmp_path / "home"
    crash_runs.prepare(home)
    process = ServeProcess(crash_runs.environment(home, server), port=free_port())
    yield process
    process.stop()


def _settings(home: Path, extra: str) -> None:
    """The tests' settings with `extra` before them (its top-level keys stay top-level)."""
    crash_runs.prepare(home)
    path = home / "config.toml"
    path.write_text(extra + path.read_text(encoding="utf-8"), encoding="utf-8")


def test_sigterm_prints_the_stop_line_and_exits_0(serve: ServeProcess) -> None:
    serve.start().wait_for(READY)
    serve.send(signal.SIGTERM)
    assert serve.wait() == 0
    assert serve.lines[-1] == "lore serve: stopped"


def test_a_reply_streaming_when_sigterm_comes_is_finished_and_kept(
    tmp_path: Path, server: FakeOpenAI, serve: ServeProcess
) -> None:
    reply = "Here is a reply long enough to be streaming when the stop comes."
    server.reply(reply)
    server.chunk_delay = 0.1  # 13 chunks: about 1.3 s
    serve.start().wait_for(READY)
    got: list[str] = []
    first = threading.Event()

    def ask() -> None:
        body = {
            "model": "lore",
            "stream": True,
            "messages": [{"role": "user", "content": "Tell me something"}],
        }
        with serve.client(tmp_path / "home") as client:
            with client.stream("POST", "/v1/chat/completions", json=body) as answer:
                for line in answer.iter_lines():
                    if line.startswith("data: {"):
                        delta = json.loads(line[6:])["choices"]
                        if delta and delta[0]["delta"].get("content"):
                            got.append(delta[0]["delta"]["content"])
                            first.set()

    asker = threading.Thread(target=ask)
    asker.start()
    assert first.wait(20)
    serve.send(signal.SIGTERM)
    asker.join(30)
    assert serve.wait() == 0 and serve.lines[-1] == "lore serve: stopped"
    assert "".join(got) == reply
    messages, _ = crash_runs.transcript_lines(tmp_path / "home")
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Tell me something"),
        ("assistant", reply),
    ]
    assert not any(m.get("interrupted") for m in messages)


def test_sighup_applies_live_settings_names_the_rest_and_keeps_them_on_a_bad_file(
    tmp_path: Path, serve: ServeProcess
) -> None:
    home = tmp_path / "home"
    serve.start().wait_for(READY)
    message = {"model": "lore", "messages": [{"role": "user", "content": "word " * 60}]}
    _settings(home, "max_message_chars = 200\n[api]\nrequests_per_minute = 10\n\n")
    serve.send(signal.SIGHUP)
    line = (
        "config.toml reloaded: applied max_message_chars; needs a restart: api.requests_per_minute"
    )
    serve.wait_for(line)
    assert line in (home / "lore.log").read_text(encoding="utf-8")
    with serve.client(home) as client:  # the new limit holds at once
        refused = client.post("/v1/chat/completions", json=message)
    assert refused.status_code == 400 and "300 characters" in refused.text, refused.text

    (home / "config.toml").write_text("[reminders\npoll_seconds = ", encoding="utf-8")
    serve.send(signal.SIGHUP)
    serve.wait_for("config.toml not reloaded, the running settings stay")
    assert serve.process is not None and serve.process.poll() is None  # still serving
    serve.send(signal.SIGTERM)
    assert serve.wait() == 0 and serve.lines[-1] == "lore serve: stopped"


def test_a_reload_takes_only_the_live_settings_from_the_new_file(tmp_path: Path) -> None:
    env = {"LORE_HOME": str(tmp_path), "USER": "anna"}
    running = load_config(env=env)
    (tmp_path / "config.toml").write_text(
        'max_tool_rounds = 3\nmodel = "scripted"\n[log]\nbackups = 7\n[api]\nport = 9000\n',
        encoding="utf-8",
    )
    outcome = reload_settings(running, load_config(env=env))
    assert outcome.applied == ("log.backups", "max_tool_rounds")
    assert outcome.need_restart == ("api.port", "model")
    assert outcome.config.max_tool_rounds == 3 and outcome.config.log.backups == 7
    assert outcome.config.api.port == running.api.port and outcome.config.model == ""
    assert reload_settings(running, running).line() == "config.toml reloaded: nothing changed"


class _Slow(ScriptedProvider):
    """A model that streams half a reply, then takes its time."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield TextChunk("Half of ")
        yield TextChunk("the answer")
        await asyncio.sleep(600)
        yield Completion(text="never")


async def test_a_chat_channels_turn_cut_short_by_the_stop_keeps_the_text_shown(
    config: Config,
) -> None:
    lore = build(config, provider=_Slow())
    daemon = Daemon(lore)
    shown = asyncio.Event()

    def emit(event: object) -> None:
        if isinstance(event, TextDelta) and event.text == "the answer":
            shown.set()

    inbound = Inbound(scope="telegram:42", channel="telegram", author="john", text="A question")
    turn = asyncio.create_task(lore.bus.send(inbound, emit))
    await asyncio.wait_for(shown.wait(), 10)
    daemon.stop()
    turn.cancel()  # as stopping cancels a channel's work
    with pytest.raises(asyncio.CancelledError):
        await turn
    user, reply = lore.session("telegram:42").messages
    assert user["content"] == "A question"
    assert reply["content"] == "Half of the answer" and reply["interrupted"] is True
    await daemon.aclose()
