"""A real `lore serve` under the supervisor, stopped at random moments, RUNS times
(`make torture`; LORE_TORTURE_RUNS changes the count): each time SIGTERM (a restart) or
kill -9, while reminders come due and just after a message was answered over HTTP. Every
reminder is delivered exactly once; every message and its reply are in the transcript."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.service_units import lore_command
from tests import crash_runs
from tests.openai_server import FakeOpenAI
from tests.serve_process import READY, ServeProcess, Supervisor, add_reminders, free_port

pytestmark = pytest.mark.torture

RUNS = int(os.environ.get("LORE_TORTURE_RUNS", "100"))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def test_restarts_and_kills_at_random_lose_and_repeat_nothing(
    tmp_path: Path, server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    crash_runs.prepare(home)
    with (home / "config.toml").open("a", encoding="utf-8") as settings:
        settings.write("[reminders]\npoll_seconds = 0.2\n")
    moments = random.Random(7)
    serve = ServeProcess(
        crash_runs.environment(home, server), port=free_port(), command=lore_command()
    )
    supervisor = Supervisor(serve).start()
    expected: list[int] = []
    asked: list[str] = []
    killed = 0
    try:
        for run in range(RUNS):
            serve.wait_for(READY, times=run + 1, timeout=60)
            expected += add_reminders(
                home, [f"r{run}-{n}" for n in range(5)], first_in=0.0, every=0.15
            )
            question = f"Question {run}"
            server.reply(f"Answer {run}")
            with serve.client(home) as client:
                body = {"model": "lore", "messages": [{"role": "user", "content": question}]}
                assert client.post("/v1/chat/completions", json=body).status_code == 200
            asked.append(question)
            serve.wait_delivered(expected[-5:-4], timeout=30)  # then kill amid the rest
            time.sleep(moments.uniform(0.0, 0.8))
            if moments.random() < 0.5:
                supervisor.kill()
                killed += 1
            else:
                supervisor.restart()
        serve.wait_for(READY, times=RUNS + 1, timeout=60)
        serve.wait_delivered(expected, timeout=60)
    finally:
        supervisor.stop()
        serve.stop()
    messages, corrupted = crash_runs.transcript_lines(home)
    delivered = Counter(int(m["reminder_id"]) for m in messages if "reminder_id" in m)
    said = [(m["role"], m["content"]) for m in messages if "reminder_id" not in m]
    lost = sum(1 for rid in expected if delivered[rid] == 0)
    twice = sum(1 for rid in expected if delivered[rid] > 1)
    with capsys.disabled():
        print(
            f"\nservice: {RUNS} runs, {killed} killed -9, {RUNS - killed} SIGTERM; "
            f"{len(expected)} reminders, {lost} lost, {twice} twice; {corrupted} bad lines"
        )
    assert (lost, twice, corrupted) == (0, 0, 0)
    assert said == [
        pair
        for n in range(RUNS)
        for pair in (("user", f"Question {n}"), ("assistant", f"Answer {n}"))
    ]
    assert supervisor.exits.count(-signal.SIGKILL) == killed
