"""Single-writer work across workers: a conversation's turn (`SessionStore.turn`) and a
named job (the lock hub behind `Services.exclusive`: Dream, the idle closer) are held by
one worker at a time, and a holder killed with SIGKILL releases them with its connection."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.backends.postgres.backend import PostgresBackend
from lore.backends.postgres.locks import LockHub

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
_HOLDER = """
import sys, time
from lore.backends.postgres.locks import LockHub
hub = LockHub(sys.argv[1])
with hub.hold("job:dream"):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def hub(postgres_url: str) -> Iterator[LockHub]:
    locks = LockHub(postgres_url)
    yield locks
    locks.close()


async def test_turns_of_one_conversation_run_one_at_a_time_across_workers(
    postgres_url: str,
) -> None:
    inside: list[int] = []
    overlaps: list[int] = []
    workers = [PostgresBackend(postgres_url, max_connections=2) for _ in range(3)]

    async def turns(worker: PostgresBackend) -> None:
        for _ in range(5):
            async with worker.sessions.turn("telegram:42"):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                await asyncio.sleep(0.01)
                inside.pop()

    try:
        await asyncio.wait_for(asyncio.gather(*(turns(w) for w in workers)), timeout=60)
    finally:
        for worker in workers:
            worker.close()
    assert overlaps == []


def test_a_busy_job_is_skipped_and_other_names_are_free(hub: LockHub, postgres_url: str) -> None:
    other_worker = LockHub(postgres_url)
    try:
        with hub.hold("job:dream") as held:
            assert held
            results: list[bool] = []

            def try_dream() -> None:
                with other_worker.hold("job:dream", wait=False) as again:
                    results.append(again)

            other = threading.Thread(target=try_dream)
            other.start()
            other.join(timeout=30)
            assert results == [False]
            with other_worker.hold("job:idle-close", wait=False) as free:
                assert free
        with other_worker.hold("job:dream", wait=False) as after:
            assert after
    finally:
        other_worker.close()


def test_a_holder_killed_with_sigkill_releases_the_lock(hub: LockHub, postgres_url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, postgres_url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        with hub.hold("job:dream", wait=False) as held:
            assert not held
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    deadline = time.monotonic() + 10  # the server notices the closed socket at once
    while True:
        with hub.hold("job:dream", wait=False) as held:
            if held or time.monotonic() > deadline:
                break
        time.sleep(0.05)
    assert held


# -- from async code ------------------------------------------------------------------------


def _slow_server(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Every lock query takes `seconds` longer, as on a slow or distant server."""
    execute = LockHub._execute

    def slow(self: LockHub, sql: str, name: str) -> tuple[object, ...] | None:
        time.sleep(seconds)
        return execute(self, sql, name)

    monkeypatch.setattr(LockHub, "_execute", slow)


async def test_taking_and_letting_go_a_lock_from_async_code_never_stalls_the_loop(
    hub: LockHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    _slow_server(monkeypatch, 0.2)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    async with hub.hold_async("turn:telegram:42"):
        pass
    ticker.cancel()
    assert ticks >= 20  # 0.4 s of lock queries, and the loop ran on through them
    assert not hub.held_anywhere("turn:telegram:42")


async def test_a_lock_taken_for_a_waiter_cancelled_meanwhile_is_let_go(
    hub: LockHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    _slow_server(monkeypatch, 0.3)
    entered = False

    async def turn() -> None:
        nonlocal entered
        async with hub.hold_async("turn:telegram:42"):
            entered = True

    waiter = asyncio.create_task(turn())
    await asyncio.sleep(0.1)  # the query that takes it is under way
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0.8)  # it comes back with the lock, which is let go again
    monkeypatch.undo()
    assert not entered
    assert not hub.held_anywhere("turn:telegram:42")
