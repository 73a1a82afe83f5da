"""Many workers on one PostgreSQL: due reminders are claimed once, each outbox item is
leased by one worker at a time, and a worker killed with SIGKILL, mid-claim or
mid-delivery, loses nothing: its transaction rolls back or its lease runs out, and
another worker delivers what it held, once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.postgres.database import PostgresDatabase
from lore.backends.postgres.outbox import PostgresOutbox
from lore.backends.postgres.reminders import PostgresReminderStore
from lore.ports.outbox import OutboxItem, ReminderPayload

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
DUE = NOW + timedelta(minutes=1)  # every reminder of `add_many` is due by then
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(postgres_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(postgres_url, max_size=4)
    yield database
    database.close()


@pytest.fixture
def store(db: PostgresDatabase) -> PostgresReminderStore:
    return PostgresReminderStore(db)


def add_many(store: PostgresReminderStore, count: int, *, scopes: int = 7) -> list[int]:
    return [
        store.add(
            f"telegram:{n % scopes}", "john", f"reminder {n} 提醒 напоминание",
            NOW + timedelta(seconds=n % 50), timezone="Asia/Taipei", now=NOW,
        ).id
        for n in range(count)
    ]  # fmt: skip


def item(key: str, scope: str = HOME) -> OutboxItem:
    payload = ReminderPayload(1, key, "john", NOW)
    return OutboxItem(0, key, scope, "cli", "reminder", payload, "pending", 0, NOW)


# -- the outbox on its own --------------------------------------------------------------


def test_an_item_is_queued_once_per_idempotency_key(db: PostgresDatabase) -> None:
    outbox = PostgresOutbox(db)
    assert outbox.put(item("reminder:1:100"), now=NOW)
    assert not outbox.put(item("reminder:1:100"), now=NOW)
    assert [i.key for i in outbox.items(HOME)] == ["reminder:1:100"]


def test_a_claimed_occurrence_enters_the_outbox_with_its_key(
    store: PostgresReminderStore,
) -> None:
    reminder = store.add(HOME, "john", "喝水", NOW, timezone="Asia/Taipei", now=NOW,
                         recurrence="every 1h", channel="telegram")  # fmt: skip
    store.claim_due(NOW)
    store.claim_due(NOW + timedelta(hours=1))
    keys = [i.key for i in store.outbox.items(HOME)]
    stamp = int(NOW.timestamp())
    assert keys == [f"reminder:{reminder.id}:{stamp + 3600}", f"reminder:{reminder.id}:{stamp}"]
    newest = store.outbox.items(HOME)[0]
    assert (newest.channel, newest.reminder.text, newest.status) == (
        "telegram",
        "喝水",
        "pending",
    )


def test_a_leased_item_waits_for_its_lease_and_only_its_owner_marks_it_done(
    db: PostgresDatabase,
) -> None:
    outbox = PostgresOutbox(db)
    outbox.put(item("k1"), now=NOW)
    [leased] = outbox.lease(owner="a", now=NOW, seconds=60)
    assert outbox.lease(owner="b", now=NOW + timedelta(seconds=59)) == []
    assert outbox.next_ready() == NOW + timedelta(seconds=60)
    [again] = outbox.lease(owner="b", now=NOW + timedelta(seconds=61))
    assert again.id == leased.id
    assert not outbox.done(leased.id, owner="a", now=NOW + timedelta(seconds=62))
    assert outbox.done(leased.id, owner="b", now=NOW + timedelta(seconds=62))
    assert outbox.lease(owner="c", now=NOW + timedelta(days=1)) == []
    assert [i.status for i in outbox.items(HOME)] == ["delivered"]


def test_a_failed_delivery_is_retried_later_and_then_marked_failed(db: PostgresDatabase) -> None:
    outbox = PostgresOutbox(db)
    outbox.put(item("k1", scope="line:group:1"), now=NOW)
    moment = NOW
    for attempt in range(8):
        [leased] = outbox.lease(owner="a", now=moment, scopes=["line:group:1"])
        outbox.retry(leased.id, owner="a", now=moment, error=f"HTTP 502 #{attempt}", delay=30)
        assert outbox.ready_scopes(moment) == []
        moment += timedelta(seconds=31)
    [failed] = outbox.items("line:group:1")
    assert (failed.status, failed.attempts, failed.last_error) == ("failed", 8, "HTTP 502 #7")
    assert outbox.lease(owner="a", now=moment + timedelta(days=1)) == []


def test_a_lease_of_other_scopes_or_of_no_scope_takes_nothing(db: PostgresDatabase) -> None:
    outbox = PostgresOutbox(db)
    outbox.put(item("k1", scope="telegram:1"), now=NOW)
    assert outbox.lease(owner="a", now=NOW, scopes=[]) == []
    assert outbox.lease(owner="a", now=NOW, scopes=["telegram:2"]) == []
    assert outbox.ready_scopes(NOW) == ["telegram:1"]
    assert [i.key for i in outbox.lease(owner="a", now=NOW, scopes=["telegram:1"])] == ["k1"]


# -- workers at once ----------------------------------------------------------------------


def run_workers(count: int, work: Callable[[int], object]) -> None:
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait()
            work(n)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors


def test_four_workers_claiming_at_once_claim_every_due_reminder_exactly_once(
    postgres_url: str, store: PostgresReminderStore
) -> None:
    ids = add_many(store, 400)
    claimed: list[list[int]] = [[] for _ in range(4)]

    def work(n: int) -> None:
        worker = PostgresReminderStore(PostgresDatabase(postgres_url, max_size=1))
        try:
            while batch := worker.claim_due(DUE, limit=7):
                claimed[n].extend(due.id for due in batch)
        finally:
            worker.db.close()

    run_workers(4, work)
    everything = [i for ids_of_one in claimed for i in ids_of_one]
    assert sorted(everything) == sorted(ids)  # none missed, none twice
    assert sum(1 for ids_of_one in claimed if ids_of_one) >= 2  # they really shared the work
    keys = Counter(
        i.key for scope in range(7) for i in store.outbox.items(f"telegram:{scope}", limit=999)
    )
    assert len(keys) == 400 and set(keys.values()) == {1}


def test_four_workers_delivering_at_once_deliver_each_item_exactly_once(
    postgres_url: str, store: PostgresReminderStore
) -> None:
    add_many(store, 300)
    store.claim_due(DUE, limit=1000)
    delivered: list[list[str]] = [[] for _ in range(4)]

    def work(n: int) -> None:
        outbox = PostgresOutbox(PostgresDatabase(postgres_url, max_size=1))
        try:
            while items := outbox.lease(owner=f"w{n}", now=DUE, limit=5):
                for leased in items:
                    if outbox.done(leased.id, owner=f"w{n}", now=DUE):
                        delivered[n].append(leased.key)
        finally:
            outbox.db.close()

    run_workers(4, work)
    everything = Counter(key for keys in delivered for key in keys)
    assert len(everything) == 300 and set(everything.values()) == {1}


# -- a worker killed with SIGKILL -----------------------------------------------------------

_WORKER = textwrap.dedent(
    """
    import sys, time
    from datetime import datetime, timedelta
    from lore.backends.postgres.database import PostgresDatabase
    from lore.backends.postgres.reminders import PostgresReminderStore

    url, stage, now = sys.argv[1], sys.argv[2], datetime.fromisoformat(sys.argv[3])
    store = PostgresReminderStore(PostgresDatabase(url, max_size=1))
    if stage == "claim":
        # Killed inside the claim's transaction: nothing of it may survive.
        with store.db.atomic():
            claimed = store.claim_due(now, limit=1000)
            print(len(claimed), flush=True)
            time.sleep(600)
    else:
        # Killed between lease and done: the items come back when the lease runs out.
        store.claim_due(now, limit=1000)
        leased = store.outbox.lease(owner="doomed", now=now, limit=1000, seconds=60)
        print(len(leased), flush=True)
        time.sleep(600)
    """
)


def start_doomed_worker(url: str, stage: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER, url, stage, DUE.isoformat()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert worker.stdout is not None
    line = worker.stdout.readline()
    if not line:
        worker.kill()
        raise AssertionError(f"the worker died early: {worker.communicate()[1]}")
    return worker, int(line)


def kill(worker: subprocess.Popen[str]) -> None:
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL


def test_a_worker_killed_mid_claim_loses_nothing(
    postgres_url: str, store: PostgresReminderStore
) -> None:
    ids = add_many(store, 50)
    worker, held = start_doomed_worker(postgres_url, "claim")
    try:
        assert held == 50
        # Its rows stay locked, so others skip them rather than wait or take them twice.
        assert store.claim_due(DUE) == []
    finally:
        kill(worker)
    # The dead connection's transaction rolled back: every reminder is claimable again.
    assert sorted(d.id for d in store.claim_due(DUE, limit=1000)) == ids


def test_a_worker_killed_mid_delivery_has_its_items_delivered_after_the_lease(
    postgres_url: str, store: PostgresReminderStore
) -> None:
    add_many(store, 50)
    worker, held = start_doomed_worker(postgres_url, "deliver")
    kill(worker)
    assert held == 50
    outbox = store.outbox
    assert outbox.lease(owner="survivor", now=DUE + timedelta(seconds=59), limit=1000) == []
    after = DUE + timedelta(seconds=61)
    taken = outbox.lease(owner="survivor", now=after, limit=1000)
    assert len(taken) == 50
    assert all(outbox.done(i.id, owner="survivor", now=after) for i in taken)
    assert outbox.lease(owner="survivor", now=after + timedelta(days=1)) == []
    assert store.claim_due(after + timedelta(days=1)) == []  # and none claimed again


def test_forget_leaves_the_text_in_no_row_of_any_table(postgres_url: str) -> None:
    from lore.backends.postgres.backend import PostgresBackend
    from lore.ports.search import Entry

    backend = PostgresBackend(postgres_url)
    try:
        first, _ = backend.memory.remember(
            HOME, "Zanzibarquux lives on Oldtownstrasse", keywords=["Flibbertigibbet"],
            author="john", via="tool", now=NOW,
        )  # fmt: skip
        later = backend.memory.supersede(
            HOME, first.id, "Zanzibarquux 住在紫色长颈鹿街", author="john", via="tool", now=NOW
        )
        backend.search_index.put([Entry(HOME, "memory", "", later.id, 0.0, later.content)])
        backend.memory.forget(HOME, later.id, by="john", via="tool", now=NOW)
        with backend.db.connection() as conn:
            tables = [
                row["tablename"]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
            ]
            for needle in ("Zanzibarquux", "zanzibarquux", "oldtownstrasse", "长颈",
                           "Flibbertigibbet", "flibbertigibbet"):  # fmt: skip
                for table in tables:
                    row = conn.execute(
                        f'SELECT count(*) AS n FROM "{table}" t'
                        " WHERE strpos(row_to_json(t)::text, %s) > 0",
                        (needle,),
                    ).fetchone()
                    assert row is not None and row["n"] == 0, (needle, table)
    finally:
        backend.close()
