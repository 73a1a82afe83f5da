"""A few kill -9 runs in the normal suite (the torture suite runs each 100+ times):
no line or database is ever damaged, no message or reminder shows up twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import crash_runs
from tests.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def test_a_few_turns_killed_mid_stream_leave_every_file_whole(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    tally = crash_runs.turn_kills(tmp_path / "home", server, 4, seed=11)
    assert tally.killed >= 1
    assert (tally.corrupted, tally.duplicated) == (0, 0), tally.line("turn")


def test_a_few_new_commands_killed_lose_and_repeat_nothing(tmp_path: Path) -> None:
    tally = crash_runs.new_kills(tmp_path / "home", 4, seed=12, size=800)
    assert tally.clean, tally.line("/new")


def test_a_few_serve_runs_killed_deliver_each_reminder_once(tmp_path: Path) -> None:
    tally = crash_runs.serve_kills(tmp_path / "home", 3, per_run=100, seed=13)
    assert tally.clean, tally.line("serve")
