"""A real `lore serve` under a small supervisor that does what systemd does with the unit
`lore service install` writes: run its ExecStart, start it again when it fails
(Restart=on-failure), and restart it with SIGTERM on request. Through a SIGTERM restart
and a kill -9, with reminders coming due across both and a message sent over HTTP, every
reminder is delivered exactly once and the message and its reply are in the transcript."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.service_units import lore_command
from tests import crash_runs
from tests.openai_server import FakeOpenAI
from tests.serve_process import READY, ServeProcess, Supervisor, add_reminders, free_port


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


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
        expected = add_reminders(home, ["one", "two", "three"], first_in=0.3, every=0.3)
        serve.wait_delivered(expected)

        server.reply("Noted: the report is due on Friday.")
        with serve.client(home) as client:
            answer = client.post(
                "/v1/chat/completions",
                json={"model": "lore", "messages": [{"role": "user", "content": "Report: Friday"}]},
            )
        assert answer.status_code == 200, answer.text

        # Due while it restarts: the next run delivers them.
        expected += add_reminders(home, ["four", "five", "six"], first_in=0.5, every=0.5)
        supervisor.restart()
        serve.wait_for(READY, times=2)
        serve.wait_delivered(expected)

        # Killed in the middle of a run of deliveries: the next run delivers the rest.
        expected += add_reminders(home, [f"kill {n}" for n in range(6)], first_in=0.3, every=0.1)
        serve.wait_delivered(expected[6:7])
        supervisor.kill()
        serve.wait_for(READY, times=3)
        serve.wait_delivered(expected)
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
