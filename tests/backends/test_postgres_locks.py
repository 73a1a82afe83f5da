"""Single-writer work across workers: an advisory lock by name (a conversation's turn,
a Dream run) is held by one worker at a time, and a holder killed with SIGKILL releases
it with its connection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.backends.postgres.database import PostgresDatabase

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
_HOLDER = """
import sys, time
from lore.backends.postgres.database import PostgresDatabase
db = PostgresDatabase(sys.argv[1], max_size=1)
with db.exclusive("dream"):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def db(postgres_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(postgres_url, max_size=6)
    yield database
    database.close()


def test_turns_of_one_conversation_run_one_at_a_time_across_workers(
    postgres_url: str,
) -> None:
    inside: list[int] = []
    overlaps: list[int] = []
    workers = [PostgresDatabase(postgres_url, max_size=1) for _ in range(3)]

    def turn(db: PostgresDatabase) -> None:
        for _ in range(5):
            with db.exclusive("turn:telegram:42"):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                time.sleep(0.01)
                inside.pop()

    threads = [threading.Thread(target=turn, args=(db,)) for db in workers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for db in workers:
            db.close()
    assert overlaps == []


def test_a_busy_job_is_skipped_and_other_names_are_free(db: PostgresDatabase) -> None:
    with db.exclusive("dream") as held:
        assert held
        other = threading.Thread(target=lambda: results.append(try_dream()))
        results: list[bool] = []

        def try_dream() -> bool:
            with db.exclusive("dream", wait=False) as again:
                return again

        other.start()
        other.join(timeout=30)
        assert results == [False]
        with db.exclusive("turn:cli:default", wait=False) as free:
            assert free
    with db.exclusive("dream", wait=False) as after:
        assert after


def test_a_holder_killed_with_sigkill_releases_the_lock(
    db: PostgresDatabase, postgres_url: str
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, postgres_url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        with db.exclusive("dream", wait=False) as held:
            assert not held
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    deadline = time.monotonic() + 10  # the server notices the closed socket at once
    while True:
        with db.exclusive("dream", wait=False) as held:
            if held or time.monotonic() > deadline:
                break
        time.sleep(0.05)
    assert held
