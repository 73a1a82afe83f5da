"""A reminder added by another process wakes a running scheduler at once: it is
delivered when due, not at the scheduler's next poll (a minute later by default)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.doorbell import ring
from lore.backends.local.reminders import SQLiteReminderStore
from lore.clock import SystemClock
from lore.reminders.delivery import Delivery
from lore.reminders.scheduler import Scheduler

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the doorbell is Linux's abstract sockets"
)


@pytest.fixture
def db(home: Path) -> Database:
    return Database(home / "lore.db")


async def test_a_reminder_added_by_another_process_is_delivered_when_due(
    home: Path, db: Database
) -> None:
    store = SQLiteReminderStore(db)
    received: list[tuple[Delivery, datetime]] = []
    arrived = asyncio.Event()

    async def deliver(due: Delivery) -> None:
        received.append((due, datetime.now(UTC)))
        arrived.set()

    scheduler = Scheduler(store, SystemClock(), deliver, max_sleep=60)
    running = asyncio.create_task(scheduler.run_forever())
    try:
        await asyncio.sleep(0.3)  # it has looked once and sleeps for its minute
        added = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "lore", "remind", "add", "позвонить маме 打电话",
             "--when", "in 3 seconds", "--home", str(home)],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "LORE_TIMEZONE": "Asia/Taipei"},
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        await asyncio.wait_for(arrived.wait(), timeout=20)
    finally:
        scheduler.stop()
        await asyncio.wait_for(running, timeout=10)
        store.close()
        db.close()
    ((due, at),) = received
    assert due.text == "позвонить маме 打电话"
    assert due.due_at <= at
    assert (at - due.due_at).total_seconds() < 5  # on time, not a minute late


def test_a_ring_for_a_process_that_is_gone_removes_its_name(home: Path) -> None:
    doorbells = home / ".doorbells"
    doorbells.mkdir(parents=True)
    (doorbells / "lore-0123456789ab-1-deadbeef").touch()  # nobody listens to it
    assert ring(home) == 0
    assert not list(doorbells.iterdir())


@pytest.mark.postgres
async def test_a_reminder_added_by_another_worker_on_postgresql_is_delivered_when_due() -> None:
    from datetime import timedelta

    from lore.backends.postgres.database import PostgresDatabase
    from lore.backends.postgres.reminders import PostgresReminderStore
    from tests.postgres_server import PostgresUnavailable, empty_lore_database

    try:
        url = empty_lore_database()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    listening, adding = PostgresDatabase(url), PostgresDatabase(url)  # two workers
    store = PostgresReminderStore(listening)
    received: list[tuple[Delivery, datetime]] = []
    arrived = asyncio.Event()

    async def deliver(due: Delivery) -> None:
        received.append((due, datetime.now(UTC)))
        arrived.set()

    scheduler = Scheduler(store, SystemClock(), deliver, max_sleep=60)
    running = asyncio.create_task(scheduler.run_forever())
    try:
        await asyncio.sleep(0.5)  # it has looked once, and listens while it sleeps
        now = datetime.now(UTC)
        PostgresReminderStore(adding).add(
            "telegram:42", "john", "напомни: 会议", now + timedelta(seconds=2),
            timezone="UTC", now=now,
        )  # fmt: skip
        await asyncio.wait_for(arrived.wait(), timeout=20)
    finally:
        scheduler.stop()
        await asyncio.wait_for(running, timeout=10)
        store.close()
        listening.close()
        adding.close()
    ((due, at),) = received
    assert due.text == "напомни: 会议"
    assert 0 <= (at - due.due_at).total_seconds() < 5
