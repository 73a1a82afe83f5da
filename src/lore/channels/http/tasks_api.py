"""Scheduled tasks over REST, beside the reminders: list (with how each last run went),
add with a time phrase, cancel. Each takes the conversation as `?scope=KEY`; a task set
here runs with the trust of the client that set it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from lore.channels.http.memories_api import Scoped

if TYPE_CHECKING:
    from lore.channels.http.access import ScopeAccess
    from lore.ports.tasks import Task

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["tasks"])


class NewTask(BaseModel):
    prompt: str = Field(min_length=1, description="what Lore does when it runs")
    when: str | None = Field(None, description="a time phrase or ISO 8601 time")
    recurrence: str | None = Field(None, description="e.g. 'weekdays 08:00', a cron line")
    max_rounds: int | None = Field(None, description="its budget of tool rounds")
    max_seconds: int | None = Field(None, description="its budget of seconds")


@router.get("/tasks")
async def list_tasks(
    access: Scoped, include_done: Annotated[bool, Query()] = False
) -> dict[str, Any]:
    """Pending tasks, soonest first (with `include_done`, finished and cancelled too),
    each with its last run's status and, when it failed, why."""
    found = access.lore.tasks.list(access.scope, include_done=include_done)
    return {"tasks": [_shown(access, task) for task in found]}


@router.post("/tasks", status_code=201)
async def add_task(new: NewTask, access: Scoped) -> dict[str, Any]:
    from lore.tasks import create_task

    lore, settings = access.lore, access.lore.config.tasks
    task = create_task(
        lore.tasks,
        scope=access.scope,
        author=access.client.author,
        prompt=new.prompt,
        when=new.when,
        recurrence=new.recurrence or None,
        now=lore.clock.now(),
        zone=lore.zone,
        channel="api",
        trust="owner" if access.client.is_owner else "member",
        max_rounds=new.max_rounds or settings.max_rounds,
        max_seconds=new.max_seconds or settings.max_seconds,
    )
    return _shown(access, task)


@router.delete("/tasks/{task_id}")
async def cancel_task(task_id: int, access: Scoped) -> dict[str, Any]:
    task = access.lore.tasks.cancel(access.scope, task_id, now=access.lore.clock.now())
    return _shown(access, task)


def _shown(access: ScopeAccess, task: Task) -> dict[str, Any]:
    from lore.tasks import describe_task

    return {**task.to_dict(), "description": describe_task(task, access.lore.clock.now())}
