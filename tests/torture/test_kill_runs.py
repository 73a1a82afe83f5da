"""Kill -9 torture, 100+ times each (`make torture`; LORE_TORTURE_RUNS changes the count):
a turn killed while its reply streams, `/new` killed while it archives a long session,
`lore serve` killed while it delivers due reminders. Each prints its counts; all are 0."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import crash_runs
from tests.openai_server import FakeOpenAI

pytestmark = pytest.mark.torture

RUNS = int(os.environ.get("LORE_TORTURE_RUNS", "100"))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _report(capsys: pytest.CaptureFixture[str], tally: crash_runs.Tally, name: str) -> None:
    with capsys.disabled():
        print(f"\n{tally.line(name)}")
        for note in tally.notes[:10]:
            print(f"  {note}")
    assert tally.runs >= RUNS and tally.killed > RUNS // 2
    assert tally.clean, tally.line(name)


def test_turns_killed_mid_stream_lose_nothing_shown(
    tmp_path: Path, server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(capsys, crash_runs.turn_kills(tmp_path / "home", server, RUNS + 1, seed=1), "turn")


def test_new_killed_at_any_moment_loses_and_repeats_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(capsys, crash_runs.new_kills(tmp_path / "home", RUNS + 1, seed=2), "/new")


def test_serve_killed_while_delivering_delivers_each_reminder_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(capsys, crash_runs.serve_kills(tmp_path / "home", RUNS + 1, seed=3), "serve")
