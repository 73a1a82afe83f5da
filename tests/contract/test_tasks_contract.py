"""What every TaskStore does, on SQLite and on PostgreSQL: scopes, checks, cancel marks,
claims that queue each occurrence once, leases only their holder can finish, and a
finish or failure that queues its outbox item in the same transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lore.errors import InvalidInputError, NotFoundError
from lore.ports.outbox import Outbox
from lore.ports.tasks import TaskStore, run_item
from tests.contract.conftest import backend_params

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "telegram:-100"


@dataclass
class Storage:
    tasks: TaskStore
    outbox: Outbox
    reopen: Callable[[], Storage]  # the same storage, as another process opens it


@pytest.fixture(params=backend_params("local", "postgres"))
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    with ExitStack() as opened:
        if request.param == "local":
            from lore.backends.local.database import Database
            from lore.backends.local.outbox import LocalOutbox
            from lore.backends.local.tasks import SQLiteTaskStore

            def open_local() -> Storage:
                db = Database(tmp_path / "lore.db")
                opened.callback(db.close)
                outbox = LocalOutbox(db)
                return Storage(SQLiteTaskStore(db, outbox), outbox, open_local)

            yield open_local()
            return
        from lore.backends.postgres.backend import PostgresBackend
        from tests.postgres_server import PostgresUnavailable, empty_lore_database

        try:
            url = empty_lore_database()
        except PostgresUnavailable as exc:
            pytest.skip(f"PostgreSQL cannot start here: {exc}")

        def open_pg() -> Storage:
            pg = PostgresBackend(url, max_connections=4)
            opened.callback(pg.close)
            return Storage(pg.tasks, pg.outbox, open_pg)

        yield open_pg()


def add(tasks: TaskStore, *, minutes: float = 10, scope: str = HOME, **kwargs: object) -> int:
    task = tasks.add(
        scope,
        "anna",
        kwargs.pop("prompt", "look at the weather; tell me if I need an umbrella"),  # type: ignore[arg-type]
        NOW + timedelta(minutes=minutes),
        timezone="Asia/Taipei",
        now=NOW,
        **kwargs,  # type: ignore[arg-type]
    )
    return task.id


def test_a_task_is_kept_with_its_budget_trust_and_canonical_recurrence(storage: Storage) -> None:
    tid = add(storage.tasks, recurrence="weekdays 08:00", trust="member", max_rounds=3)
    task = storage.reopen().tasks.get(HOME, tid)
    assert (task.recurrence, task.trust, task.max_rounds, task.max_seconds) == (
        "weekly mon,tue,wed,thu,fri 08:00",
        "member",
        3,
        120,
    )
    assert task.status == "pending" and task.due_at == NOW + timedelta(minutes=10)
    assert task.last_status is None


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"prompt": "   "}, "needs a prompt"),
        ({"prompt": "x" * 2001}, "the limit is 2000"),
        ({"max_rounds": 0}, "tool rounds"),
        ({"max_seconds": 100_000}, "seconds"),
        ({"recurrence": "every blue moon"}, "unknown day"),
    ],
)
def test_what_would_never_run_well_is_refused_and_nothing_is_stored(
    storage: Storage, kwargs: dict[str, Any], error: str
) -> None:
    with pytest.raises(InvalidInputError, match=error):
        add(storage.tasks, **kwargs)
    assert storage.tasks.list(HOME, include_done=True) == []


def test_another_conversations_task_is_not_found_and_not_cancelled(storage: Storage) -> None:
    tid = add(storage.tasks, scope=GROUP)
    with pytest.raises(NotFoundError, match=f"#{tid}"):
        storage.tasks.cancel(HOME, tid, now=NOW)
    with pytest.raises(NotFoundError, match="#99999999999999999999"):
        storage.tasks.get(HOME, 99999999999999999999)
    assert storage.tasks.get(GROUP, tid).status == "pending"
    assert [t.id for t in storage.tasks.list(None)] == [tid]
    assert storage.tasks.list(HOME) == []


def test_cancel_twice_says_already_cancelled(storage: Storage) -> None:
    tid = add(storage.tasks)
    assert storage.tasks.cancel(HOME, tid, now=NOW).status == "cancelled"
    with pytest.raises(InvalidInputError, match="already cancelled"):
        storage.tasks.cancel(HOME, tid, now=NOW)
    assert storage.tasks.list(HOME) == []
    assert [t.status for t in storage.tasks.list(HOME, include_done=True)] == ["cancelled"]


def test_a_due_occurrence_is_claimed_once_even_by_a_second_process(storage: Storage) -> None:
    once = add(storage.tasks, minutes=1)
    daily = add(storage.tasks, minutes=2, recurrence="daily 17:05")
    later = NOW + timedelta(minutes=5)
    runs = storage.tasks.claim_due(later)
    assert [run.task.id for run in runs] == [once, daily]
    assert [run.key for run in runs] == [
        f"task:{once}:{int((NOW + timedelta(minutes=1)).timestamp())}",
        f"task:{daily}:{int((NOW + timedelta(minutes=2)).timestamp())}",
    ]
    assert storage.reopen().tasks.claim_due(later) == []
    assert storage.tasks.get(HOME, once).status == "finished"
    moved = storage.tasks.get(HOME, daily)
    assert moved.status == "pending" and moved.due_at == datetime(2026, 12, 1, 9, 5, tzinfo=UTC)
    assert moved.run_count == 1


def test_a_run_claimed_well_after_its_time_is_late(storage: Storage) -> None:
    add(storage.tasks, minutes=1)
    (run,) = storage.tasks.claim_due(NOW + timedelta(hours=3))
    assert run.late


def test_a_leased_run_is_not_leased_again_until_its_lease_runs_out(storage: Storage) -> None:
    add(storage.tasks, minutes=1)
    at = NOW + timedelta(minutes=2)
    storage.tasks.claim_due(at)
    (run,) = storage.tasks.lease_runs(owner="a", now=at, seconds=60)
    assert run.attempts == 1
    assert storage.reopen().tasks.lease_runs(owner="b", now=at, seconds=60) == []
    (again,) = storage.tasks.lease_runs(owner="b", now=at + timedelta(seconds=61), seconds=60)
    assert again.id == run.id and again.attempts == 2
    item = run_item(run, "no umbrella today", kind="task", now=at)
    assert not storage.tasks.finish_run(run.id, owner="a", now=at, item=item)  # lost its lease
    assert storage.outbox.items(HOME) == []
    assert storage.tasks.finish_run(run.id, owner="b", now=at, item=item)
    (queued,) = storage.outbox.items(HOME)
    assert (queued.key, queued.kind) == (run.key, "task")
    assert storage.tasks.get(HOME, run.task.id).last_status == "done"


def test_a_failed_run_keeps_its_reason_and_tells_the_conversation(storage: Storage) -> None:
    tid = add(storage.tasks, minutes=1, recurrence="every 1h")
    at = NOW + timedelta(minutes=2)
    storage.tasks.claim_due(at)
    (run,) = storage.tasks.lease_runs(owner="a", now=at, seconds=60)
    reason = "used up its 4 tool rounds (рамки исчерпаны)"
    item = run_item(run, f"task #{tid} failed: {reason}", kind="task_failed", now=at)
    assert storage.tasks.fail_run(run.id, owner="a", now=at, error=reason, item=item)
    task = storage.reopen().tasks.get(HOME, tid)
    assert (task.last_status, task.last_error, task.status) == ("failed", reason, "pending")
    assert [i.kind for i in storage.outbox.items(HOME)] == ["task_failed"]
    assert storage.tasks.lease_runs(owner="b", now=at + timedelta(hours=1), seconds=60) == []


def test_the_leases_of_an_ended_process_run_out_at_once(storage: Storage) -> None:
    add(storage.tasks, minutes=1)
    at = NOW + timedelta(minutes=2)
    storage.tasks.claim_due(at)
    storage.tasks.lease_runs(owner="gone", now=at, seconds=600)
    assert storage.tasks.end_leases(["gone"]) == 1
    assert len(storage.tasks.lease_runs(owner="next", now=at, seconds=60)) == 1


def test_a_released_run_is_taken_again_without_counting_an_attempt(storage: Storage) -> None:
    add(storage.tasks, minutes=1)
    at = NOW + timedelta(minutes=2)
    storage.tasks.claim_due(at)
    (run,) = storage.tasks.lease_runs(owner="a", now=at, seconds=60)
    storage.tasks.release_run(run.id, owner="a")
    (again,) = storage.tasks.lease_runs(owner="b", now=at, seconds=60)
    assert again.attempts == 1


def test_the_next_time_is_the_soonest_due_task_or_a_waiting_run(storage: Storage) -> None:
    assert storage.tasks.next_time() is None
    add(storage.tasks, minutes=30)
    add(storage.tasks, minutes=1, prompt="看看天气，需要带伞吗？")
    assert storage.tasks.next_time() == NOW + timedelta(minutes=1)
    at = NOW + timedelta(minutes=2)
    storage.tasks.claim_due(at)
    assert storage.tasks.next_time() == at  # a run waits to be run
    storage.tasks.lease_runs(owner="a", now=at, seconds=60)
    assert storage.tasks.next_time() == at + timedelta(seconds=60)  # when its lease ends
