"""A real `lore serve` under a small supervisor that does what systemd does with the unit
`lore service install` writes: run its ExecStart, start it again when it fails
(Restart=on-failure), and restart it with SIGTERM on request. Through a SIGTERM restart
and a kill -9, with reminders coming due across both and a message sent over HTTP, every
reminder is delivered exactly once and the message and its reply are in the transcript."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.config import load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from lore.service_units import lore_command
from tests import crash_runs
from tests.openai_server import FakeOpenAI
from tests.serve_process import READY, ServeProcess, free_port

RESTART_SECONDS = 0.2  # the unit's RestartSec, shortened


class Supervisor:
    """Runs `lore serve` until `stop()`; a run that ends other than by a clean exit is
    started again after RESTART_SECONDS, as Restart=on-failure does."""

    def __init__(self, serve: ServeProcess) -> None:
        self.serve = serve
        self.exits: list[int] = []
        self._restarting = False
        self._stopping = False
        self._thread = threading.Thread(target=self._supervise, daemon=True)

    def start(self) -> Supervisor:
        self.serve.start()
        self._thread.start()
        return self

    def _supervise(self) -> None:
        while True:
            code = self.serve.wait(timeout=120)
            self.exits.append(code)
            if self._stopping or (code == 0 and not self._restarting):
                return
            self._restarting = False
            time.sleep(RESTART_SECONDS)
            self.serve.start()

    def restart(self) -> None:
        """`systemctl --user restart lore`: SIGTERM, then start again."""
        self._restarting = True
        self.serve.send(signal.SIGTERM)

    def kill(self) -> None:
        self.serve.send(signal.SIGKILL)

    def stop(self) -> None:
        self._stopping = True
        self.serve.send(signal.SIGTERM)
        self._thread.join(60)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _remind(home: Path, texts: list[str], *, first_in: float, every: float) -> list[int]:
    """Reminders added by another process (as `lore remind add` does), due from
    `first_in` seconds on, `every` seconds apart."""
    lore = build(load_config(flags={"home": str(home)}), provider=ScriptedProvider())
    now = datetime.now(UTC)
    ids = []
    for n, text in enumerate(texts):
        due = now + timedelta(seconds=first_in + n * every)
        ids.append(lore.reminders.add("cli:default", "anna", text, due, timezone="UTC", now=now).id)
    lore.db.close()
    return ids


def _delivered(serve: ServeProcess, ids: list[int]) -> None:
    for rid in ids:
        serve.wait_for(f"delivered reminder #{rid} to ", timeout=20)


def test_restarted_after_sigterm_and_kill_9_it_loses_and_repeats_nothing(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    home = tmp_path / "home"
    crash_runs.prepare(home)
    with (home / "config.toml").open("a", encoding="utf-8") as settings:
        settings.write("[reminders]\npoll_seconds = 0.2\n")
    serve = ServeProcess(
        crash_runs.environment(home, server), port=free_port(), command=lore_command()
    )
    supervisor = Supervisor(serve).start()
    try:
        serve.wait_for(READY)
        expected = _remind(home, ["one", "two", "three"], first_in=0.3, every=0.3)
        _delivered(serve, expected)

        server.reply("Noted: the report is due on Friday.")
        with serve.client(home) as client:
            answer = client.post(
                "/v1/chat/completions",
                json={"model": "lore", "messages": [{"role": "user", "content": "Report: Friday"}]},
            )
        assert answer.status_code == 200, answer.text

        # Due while it restarts: the next run delivers them.
        expected += _remind(home, ["four", "five", "six"], first_in=0.5, every=0.5)
        supervisor.restart()
        serve.wait_for(READY, times=2)
        _delivered(serve, expected)

        # Killed in the middle of a run of deliveries: the next run delivers the rest.
        expected += _remind(home, [f"kill {n}" for n in range(6)], first_in=0.3, every=0.1)
        _delivered(serve, expected[6:7])
        supervisor.kill()
        serve.wait_for(READY, times=3)
        _delivered(serve, expected)
    finally:
        supervisor.stop()
        serve.stop()
    assert supervisor.exits == [0, -signal.SIGKILL, 0], serve.output
    assert serve.count("lore serve: stopped") == 2  # each SIGTERM stop said so
    messages, corrupted = crash_runs.transcript_lines(home)
    delivered = Counter(int(m["reminder_id"]) for m in messages if "reminder_id" in m)
    assert corrupted == 0
    assert delivered == Counter(expected), serve.output  # each once
    said = [(m["role"], m["content"]) for m in messages if "reminder_id" not in m]
    assert said == [
        ("user", "Report: Friday"),
        ("assistant", "Noted: the report is due on Friday."),
    ]
