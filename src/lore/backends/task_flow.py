"""How a task store keeps tasks and their runs, the same on every store: what is checked
before a write, times to the whole second, which ids are not found, and the two
transactions exactly-once rests on. The claim: what is due (oldest first, rows another
claim holds skipped) is advanced and each occurrence queued as a run under its key. The
finish: only the owner still leasing the run marks it done or failed, and the reply (or
why it failed) enters the outbox in that same transaction.

A store subclasses `TaskFlow` and gives its dialect as hooks: its transactions, how a
time is stored and read back, its placeholders and its row locks. The SQL is written
once, here, with `?` placeholders.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from lore.backends.outbox_flow import OutboxFlow, Row
from lore.backends.stored_time import whole_second
from lore.errors import InvalidInputError, NotFoundError
from lore.events import Trust
from lore.ports.outbox import OutboxItem
from lore.ports.reminders import LATE_AFTER, schedule_named, zone_named
from lore.ports.tasks import RunStatus, Task, TaskRun, check_task, run_key
from lore.schedule import next_after

__all__ = ["TaskFlow"]

_MAX_ID = 2**63 - 1
_COLUMNS = (
    "id, scope, author, prompt, due_at, timezone, recurrence, anchor_at, status, channel, "
    "trust, max_rounds, max_seconds, created_at, run_count"
)
_RUN_COLUMNS = "id, task_id, key, late, status, attempts, error, due_at"


class TaskFlow(ABC):
    """The flow of a task store; its runs' replies go to `outbox`, on the same connections."""

    def __init__(self, outbox: OutboxFlow[Any]) -> None:
        self._outbox = outbox

    def add(
        self,
        scope: str,
        author: str,
        prompt: str,
        due: datetime,
        *,
        timezone: str,
        now: datetime,
        recurrence: str | None = None,
        channel: str = "",
        trust: Trust = "owner",
        max_rounds: int = 4,
        max_seconds: int = 120,
    ) -> Task:
        due_at, created_at = _second(due, up=True), _second(now)
        prompt, canonical = check_task(
            prompt,
            due,
            timezone=timezone,
            recurrence=recurrence,
            max_rounds=max_rounds,
            max_seconds=max_seconds,
        )
        with self._writing() as conn:
            row = self._run(
                conn,
                "INSERT INTO tasks (scope, author, prompt, due_at, timezone, recurrence, "
                "anchor_at, channel, trust, max_rounds, max_seconds, created_at) "
                f"VALUES (?,?,?,?,?,?,?,?,?,?,?,?) RETURNING {_COLUMNS}",
                (scope, author, prompt, self._at(due_at), timezone, canonical,
                 self._at(due_at), channel, trust, max_rounds, max_seconds,
                 self._at(created_at)),
            ).fetchone()  # fmt: skip
            return self._task(row)

    def cancel(self, scope: str, task_id: int, *, now: datetime) -> Task:
        with self._writing() as conn:
            task = self._get(conn, scope, task_id, lock=True)
            if task.status != "pending":
                raise InvalidInputError(f"task #{task_id} was already {task.status}")
            self._run(
                conn,
                "UPDATE tasks SET status = 'cancelled', cancelled_at = ? WHERE id = ?",
                (self._at(_second(now)), task_id),
            )
            return replace(task, status="cancelled")

    def get(self, scope: str, task_id: int) -> Task:
        with self._reading() as conn:
            return self._with_runs(conn, [self._get(conn, scope, task_id)])[0]

    def claim_due(
        self, now: datetime, limit: int = 100, *, late_after: timedelta = LATE_AFTER
    ) -> list[TaskRun]:
        moment = _second(now)
        claimed: list[TaskRun] = []
        with self._claiming() as conn:
            rows = self._run(
                conn,
                f"SELECT {_COLUMNS} FROM tasks WHERE status = 'pending' AND due_at <= ? "
                f"ORDER BY due_at LIMIT ?{self._skip_locked}",
                (self._at(moment), limit),
            ).fetchall()
            for task in (self._task(row) for row in rows):
                following = _following(task, now)
                if following is None:
                    self._run(
                        conn,
                        "UPDATE tasks SET status = 'finished', run_count = run_count + 1 "
                        "WHERE id = ?",
                        (task.id,),
                    )
                else:
                    self._run(
                        conn,
                        "UPDATE tasks SET due_at = ?, run_count = run_count + 1 WHERE id = ?",
                        (self._at(_second(following, up=True)), task.id),
                    )
                late = now - task.due_at > late_after
                key = run_key(task.id, task.due_at)
                row = self._run(
                    conn,
                    "INSERT INTO task_runs (task_id, key, scope, due_at, late, created_at) "
                    f"VALUES (?,?,?,?,?,?) ON CONFLICT (key) DO NOTHING RETURNING {_RUN_COLUMNS}",
                    (task.id, key, task.scope, self._at(task.due_at), late, self._at(moment)),
                ).fetchone()
                if row is not None:
                    claimed.append(self._run_of(row, task))
        return claimed

    def lease_runs(
        self, *, owner: str, now: datetime, seconds: float, limit: int = 10
    ) -> list[TaskRun]:
        until = now + timedelta(seconds=seconds)
        with self._claiming() as conn:
            rows = self._run(
                conn,
                f"SELECT {_RUN_COLUMNS} FROM task_runs WHERE status = 'pending' AND "
                "(lease_until IS NULL OR lease_until < ?) ORDER BY id LIMIT ?"
                f"{self._skip_locked}",
                (self._lease_at(now), limit),
            ).fetchall()
            runs = []
            for row in rows:
                self._run(
                    conn,
                    "UPDATE task_runs SET lease_owner = ?, lease_until = ?, "
                    "attempts = attempts + 1 WHERE id = ?",
                    (owner, self._lease_at(until), row["id"]),
                )
                task = self._find(conn, int(row["task_id"]))
                if task is not None:
                    run = self._run_of(row, task)
                    runs.append(replace(run, attempts=run.attempts + 1))
        return runs

    def finish_run(self, run_id: int, *, owner: str, now: datetime, item: OutboxItem) -> bool:
        return self._end_run(run_id, owner, now, "done", "", item)

    def fail_run(
        self, run_id: int, *, owner: str, now: datetime, error: str, item: OutboxItem
    ) -> bool:
        return self._end_run(run_id, owner, now, "failed", error[:500], item)

    def release_run(self, run_id: int, *, owner: str) -> None:
        with self._writing() as conn:
            self._run(
                conn,
                "UPDATE task_runs SET lease_owner = NULL, lease_until = NULL, "
                "attempts = attempts - 1 WHERE id = ? AND status = 'pending' AND lease_owner = ?",
                (run_id, owner),
            )

    def end_leases(self, owners: Sequence[str]) -> int:
        if not owners:
            return 0
        marks = ",".join("?" * len(owners))
        with self._writing() as conn:
            cursor = self._run(
                conn,
                "UPDATE task_runs SET lease_until = NULL WHERE status = 'pending' "
                f"AND lease_owner IN ({marks})",
                tuple(owners),
            )
            return int(cursor.rowcount)

    redacted_noun = "task"  # forget-everywhere's word for one changed record

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every task's prompt and every run's error that `match`es through `redact`
        (forget everywhere); how many records (would) change."""
        with self._reading() as conn:
            prompts = self._run(conn, "SELECT id, prompt AS text FROM tasks").fetchall()
            errors = self._run(
                conn, "SELECT id, error AS text FROM task_runs WHERE error <> ''"
            ).fetchall()
        tasks = [(redact(r["text"]), int(r["id"])) for r in prompts if match(r["text"])]
        runs = [(redact(r["text"]), int(r["id"])) for r in errors if r["text"] and match(r["text"])]
        if (tasks or runs) and not dry_run:
            with self._writing() as conn:
                for text, task_id in tasks:
                    self._run(conn, "UPDATE tasks SET prompt = ? WHERE id = ?", (text, task_id))
                for text, run_id in runs:
                    self._run(conn, "UPDATE task_runs SET error = ? WHERE id = ?", (text, run_id))
        return len(tasks) + len(runs)

    def next_time(self) -> datetime | None:
        with self._reading() as conn:
            (due,) = _values(
                self._run(conn, "SELECT min(due_at) FROM tasks WHERE status = 'pending'").fetchone()
            )
            (waiting,) = _values(
                self._run(
                    conn,
                    "SELECT min(coalesce(lease_until, created_at)) FROM task_runs "
                    "WHERE status = 'pending'",
                ).fetchone()
            )
        times = [self._moment(t) for t in (due, waiting) if t is not None]
        return min(times, default=None)

    # -- the flow's own steps ---------------------------------------------------------------

    def _end_run(
        self,
        run_id: int,
        owner: str,
        now: datetime,
        status: RunStatus,
        error: str,
        item: OutboxItem,
    ) -> bool:
        with self._writing() as conn:
            cursor = self._run(
                conn,
                "UPDATE task_runs SET status = ?, error = ?, finished_at = ?, "
                "lease_owner = NULL, lease_until = NULL "
                "WHERE id = ? AND status = 'pending' AND lease_owner = ?",
                (status, error, self._at(_second(now)), run_id, owner),
            )
            if cursor.rowcount != 1:
                return False
            self._outbox.put_all_in(conn, [item], now=now)
            return True

    def _get(self, conn: Any, scope: str, task_id: int, *, lock: bool = False) -> Task:
        task = None
        if 0 < task_id <= _MAX_ID:  # a larger id names no task (and cannot bind)
            task = self._find(conn, task_id, lock=lock)
        if task is None or task.scope != scope:
            raise NotFoundError(f"no task #{task_id} in this conversation")
        return task

    def _find(self, conn: Any, task_id: int, *, lock: bool = False) -> Task | None:
        row = self._run(
            conn,
            f"SELECT {_COLUMNS} FROM tasks WHERE id = ?{self._for_update if lock else ''}",
            (task_id,),
        ).fetchone()
        return None if row is None else self._task(row)

    def _with_runs(self, conn: Any, tasks: list[Task]) -> list[Task]:
        """Each task with its latest run's status, time and error."""
        if not tasks:
            return tasks
        marks = ",".join("?" * len(tasks))
        rows = self._run(
            conn,
            "SELECT task_id, status, error, finished_at FROM task_runs "
            f"WHERE task_id IN ({marks}) ORDER BY id",
            tuple(task.id for task in tasks),
        ).fetchall()
        latest = {int(row["task_id"]): row for row in rows}
        out = []
        for task in tasks:
            row = latest.get(task.id)
            if row is None:
                out.append(task)
                continue
            finished = row["finished_at"]
            out.append(
                replace(
                    task,
                    last_status=row["status"],
                    last_error=row["error"] or "",
                    last_run_at=None if finished is None else self._moment(finished),
                )
            )
        return out

    def _task(self, row: Row) -> Task:
        return Task(
            id=int(row["id"]),
            scope=row["scope"],
            author=row["author"],
            prompt=row["prompt"],
            due_at=self._moment(row["due_at"]),
            timezone=row["timezone"],
            recurrence=row["recurrence"],
            anchor_at=self._moment(row["anchor_at"]),
            status=row["status"],
            channel=row["channel"],
            trust=row["trust"],
            max_rounds=int(row["max_rounds"]),
            max_seconds=int(row["max_seconds"]),
            created_at=self._moment(row["created_at"]),
            run_count=int(row["run_count"]),
        )

    def _run_of(self, row: Row, task: Task) -> TaskRun:
        return TaskRun(
            id=int(row["id"]),
            key=row["key"],
            task=replace(task, due_at=self._moment(row["due_at"])),
            late=bool(row["late"]),
            status=row["status"],
            attempts=int(row["attempts"]),
            error=row["error"] or "",
        )

    # -- the dialect each store gives ---------------------------------------------------

    _skip_locked = ""  # what ends a SELECT that claims rows, skipping those others hold
    _for_update = ""  # what ends a SELECT that locks its row

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]:
        """One write transaction."""

    def _claiming(self) -> AbstractContextManager[Any]:
        """The transaction of a claim or lease (by default `_writing`'s)."""
        return self._writing()

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]:
        """A connection to read from."""

    @abstractmethod
    def _run(self, conn: Any, sql: str, args: Sequence[object] = ()) -> Any:
        """Execute `sql` (with `?` placeholders); the cursor."""

    @abstractmethod
    def _at(self, moment: datetime) -> object:
        """A whole-second moment as stored."""

    @abstractmethod
    def _lease_at(self, moment: datetime) -> object:
        """A lease's moment (to the fraction) as stored."""

    @abstractmethod
    def _moment(self, stored: Any) -> datetime:
        """A stored moment, aware."""

    # Last in the class: below it, `list` would name this method, not the builtin.
    def list(
        self, scope: str | None, *, include_done: bool = False, limit: int = 200
    ) -> list[Task]:
        where = [] if include_done else ["status = 'pending'"]
        args: list[object] = []
        if scope is not None:
            where.append("scope = ?")
            args.append(scope)
        sql = f"SELECT {_COLUMNS} FROM tasks"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY status != 'pending', due_at, id LIMIT ?"
        with self._reading() as conn:
            rows = self._run(conn, sql, (*args, limit)).fetchall()
            return self._with_runs(conn, [self._task(row) for row in rows])


def _following(task: Task, now: datetime) -> datetime | None:
    """Where a claimed task moves: its next run time after `now`, None when done."""
    if not task.recurrence:
        return None
    schedule = schedule_named(task.recurrence)
    return next_after(schedule, task.anchor_at, now, zone_named(task.timezone))


def _values(row: Any) -> tuple[Any, ...]:
    return tuple(row.values()) if isinstance(row, dict) else tuple(row)


def _second(moment: datetime, *, up: bool = False) -> datetime:
    return whole_second(moment, "task", up=up).astimezone(UTC)
