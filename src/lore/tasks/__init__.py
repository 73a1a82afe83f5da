"""Scheduled tasks: a reminder's sibling that, at its time, runs one turn in the
conversation it came from and sends the reply there.

`create_task` is the one way in (the model's tool, the CLI, the API): it reads `when`
and the recurrence as reminders do (`lore.reminders.first_due`, the one reading of
times), refuses what would never run, and stores the first run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from lore.events import Trust
from lore.ports.reminders import zone_named
from lore.ports.tasks import Task, TaskRun, TaskStore
from lore.reminders import first_due, in_words
from lore.reminders.when import format_local, zone_name

__all__ = ["Task", "TaskRun", "TaskStore", "create_task", "describe_task"]


def create_task(
    store: TaskStore,
    *,
    scope: str,
    author: str,
    prompt: str,
    when: str | None,
    recurrence: str | Mapping[str, Any] | None = None,
    now: datetime,
    zone: tzinfo,
    channel: str = "",
    trust: Trust = "owner",
    max_rounds: int = 4,
    max_seconds: int = 120,
) -> Task:
    """Store a task first run at `when` (and repeating by `recurrence`), or refuse with a
    one-line reason; nothing is stored on error."""
    first, schedule = first_due(when, recurrence, now=now, zone=zone, what="a task")
    return store.add(
        scope,
        author,
        prompt,
        first,
        timezone=zone_name(zone),
        now=now,
        recurrence=schedule.text if schedule else None,
        channel=channel,
        trust=trust,
        max_rounds=max_rounds,
        max_seconds=max_seconds,
    )


def describe_task(task: Task, now: datetime | None = None) -> str:
    """One line: #3 Tue 2026-12-01 08:00 (Asia/Taipei), in 16 h — look at the weather
    [repeats weekdays 08:00] — last run failed: <why>."""
    line = f"#{task.id} {format_local(task.due_at, zone_named(task.timezone))}"
    if now is not None and task.status == "pending":
        line += f", {in_words(task.due_at - now)}"
    line += f" — {task.prompt}"
    if task.recurrence:
        line += f" [repeats {task.recurrence}]"
    if task.status != "pending":
        line += f" ({task.status})"
    if task.last_status == "failed":
        line += f" — last run failed: {task.last_error}"
    elif task.last_status == "pending":
        line += " — running"
    elif task.last_status == "done":
        line += " — last run done"
    return line
