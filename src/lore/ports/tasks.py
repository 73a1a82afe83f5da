"""The scheduled tasks port: what a task is, and what every task store must do.

A task is a reminder's sibling: instead of echoing a fixed text at its time, it runs one
turn (its prompt) in the conversation it came from, and the reply goes out through the
outbox. A claim moves a due occurrence into the store's run queue in the same
transaction that advances the task; a worker leases a run, runs the turn, then finishes
the run and queues the reply in the outbox in one transaction, so neither the run nor
its reply is lost or doubled, whichever worker dies when.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from lore.errors import InvalidInputError
from lore.events import Trust
from lore.ports.outbox import OutboxItem, ReminderPayload
from lore.ports.reminders import LATE_AFTER, schedule_named, zone_named
from lore.schedule import next_after

__all__ = [
    "LATE_AFTER",
    "MAX_PROMPT",
    "MAX_ROUNDS",
    "MAX_SECONDS",
    "RunStatus",
    "Task",
    "TaskRun",
    "TaskStatus",
    "TaskStore",
    "check_task",
    "run_item",
    "run_key",
]

MAX_PROMPT = 2000
MAX_ROUNDS = 20  # a task's own budget of tool rounds may not go above this
MAX_SECONDS = 600  # nor its budget of seconds

# A task waits for its time, ran its last occurrence (a one-shot), or was cancelled.
TaskStatus = Literal["pending", "finished", "cancelled"]
# A run waits to be run (leased or not), ran and queued its reply, or failed with a reason.
RunStatus = Literal["pending", "done", "failed"]


@dataclass(frozen=True)
class Task:
    id: int
    scope: str
    author: str
    prompt: str
    due_at: datetime  # the next (or last) run time, UTC
    timezone: str  # IANA name; recurrence is read in this zone
    recurrence: str | None  # canonical schedule text; None for a one-shot
    anchor_at: datetime  # the first run time; interval schedules count from it
    status: TaskStatus
    channel: str
    trust: Trust  # the trust of whoever set it: its turn runs with that trust
    max_rounds: int  # the budget of tool rounds of each run
    max_seconds: int  # and of seconds
    created_at: datetime
    run_count: int
    # The latest run: its status, when it finished, and why it failed.
    last_status: RunStatus | None = None
    last_run_at: datetime | None = None
    last_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "author": self.author,
            "prompt": self.prompt,
            "due_at": self.due_at.isoformat(),
            "local_due": self.due_at.astimezone(zone_named(self.timezone)).isoformat(),
            "timezone": self.timezone,
            "recurrence": self.recurrence,
            "status": self.status,
            "channel": self.channel,
            "trust": self.trust,
            "max_rounds": self.max_rounds,
            "max_seconds": self.max_seconds,
            "created_at": self.created_at.isoformat(),
            "run_count": self.run_count,
            "last_status": self.last_status,
            "last_run_at": self.last_run_at.isoformat() if self.last_run_at else None,
            "last_error": self.last_error,
        }


@dataclass(frozen=True)
class TaskRun:
    """One occurrence of a task to run: the task as it was when claimed, and the run's
    idempotency key (the turn's message id, then the reply's outbox key)."""

    id: int
    key: str
    task: Task  # `due_at` is this occurrence's
    late: bool
    status: RunStatus
    attempts: int
    error: str = ""

    @property
    def scope(self) -> str:
        return self.task.scope


class TaskStore(Protocol):
    """Tasks per scope, and their runs. Each public write is one transaction.

    Times are kept to the whole second (a due time rounds up, `now` rounds down); a naive
    time is a ValueError. Another scope's id, or an unknown one, is a NotFoundError naming
    "#id". The suite in tests/contract/test_tasks_contract.py holds every backend to this.
    """

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
        """A pending task; `check_task` refuses what it would refuse (nothing stored)."""

    def cancel(self, scope: str, task_id: int, *, now: datetime) -> Task:
        """Mark a pending task cancelled (a run already claimed still runs); one no
        longer pending is an InvalidInputError "already <status>"."""

    def get(self, scope: str, task_id: int) -> Task: ...

    def claim_due(
        self, now: datetime, limit: int = 100, *, late_after: timedelta = LATE_AFTER
    ) -> list[TaskRun]:
        """Move up to `limit` due occurrences into the run queue in one transaction: a
        one-shot becomes finished, a recurring one moves to its next time after `now`
        (missed ones run once, late). Each occurrence is queued once, by its key."""

    def lease_runs(
        self, *, owner: str, now: datetime, seconds: float, limit: int = 10
    ) -> list[TaskRun]:
        """Take pending runs no running lease holds, oldest first, for `seconds`; each
        counts one attempt more."""

    def finish_run(self, run_id: int, *, owner: str, now: datetime, item: OutboxItem) -> bool:
        """The run is done and `item` (its reply) queued in the outbox, one transaction;
        False (nothing changed) when `owner` no longer holds the run."""

    def fail_run(
        self, run_id: int, *, owner: str, now: datetime, error: str, item: OutboxItem
    ) -> bool:
        """The run failed for `error` (kept, shown by `list`), and `item` (telling the
        conversation) is queued; False when `owner` no longer holds the run."""

    def release_run(self, run_id: int, *, owner: str) -> None:
        """Give a leased run back untried (stopped before it began)."""

    def end_leases(self, owners: Sequence[str]) -> int:
        """The leases these owners (ended processes) hold run out now; how many."""

    def next_time(self) -> datetime | None:
        """When the soonest pending task falls due, or now-ish when a run waits."""

    # Last in the class: below it, `list` would name this method, not the builtin.
    def list(
        self, scope: str | None, *, include_done: bool = False, limit: int = 200
    ) -> list[Task]:
        """A scope's (or, with None, every scope's) pending tasks, soonest first; with
        `include_done` the finished and cancelled after them. Each with its latest run."""


def check_task(
    prompt: str,
    due: datetime,
    *,
    timezone: str,
    recurrence: str | None,
    max_rounds: int,
    max_seconds: int,
) -> tuple[str, str | None]:
    """What every task store checks before it writes: a prompt within MAX_PROMPT, a known
    zone, a recurrence that fires, a budget within bounds. Returns the prompt (trimmed)
    and the recurrence in canonical form."""
    prompt = prompt.strip()
    if not prompt:
        raise InvalidInputError("a task needs a prompt: what to do when it runs")
    if len(prompt) > MAX_PROMPT:
        raise InvalidInputError(
            f"task prompt is {len(prompt)} characters; the limit is {MAX_PROMPT}"
        )
    if not 1 <= max_rounds <= MAX_ROUNDS:
        raise InvalidInputError(f"a task's tool rounds must be between 1 and {MAX_ROUNDS}")
    if not 5 <= max_seconds <= MAX_SECONDS:
        raise InvalidInputError(f"a task's seconds must be between 5 and {MAX_SECONDS}")
    zone = zone_named(timezone)
    if not recurrence:
        return prompt, None
    schedule = schedule_named(recurrence)
    if next_after(schedule, due, due, zone) is None:
        raise InvalidInputError(f"recurrence {recurrence!r} never fires")
    return prompt, schedule.text


def run_key(task_id: int, due_at: datetime) -> str:
    """The idempotency key of one occurrence of a task: it runs and is delivered once."""
    return f"task:{task_id}:{int(due_at.timestamp())}"


def run_item(run: TaskRun, text: str, *, kind: str, now: datetime) -> OutboxItem:
    """What a run queues in the outbox under its key: the reply (`kind` "task") or why it
    failed ("task_failed"). No author: a task's reply names no one."""
    task = run.task
    return OutboxItem(
        id=0,
        key=run.key,
        scope=task.scope,
        channel=task.channel,
        kind=kind,
        payload=ReminderPayload(
            reminder_id=task.id,
            text=text,
            author="",
            due_at=task.due_at,
            timezone=task.timezone,
            late=run.late,
            recurrence=task.recurrence,
        ),
        status="pending",
        attempts=0,
        created_at=now,
    )
