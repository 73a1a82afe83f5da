"""The model's task tools: schedule_task, list_tasks, cancel_task.

Their descriptions fence them from their neighbours: a reminder echoes a fixed text at
its time; a task runs a turn (the model works: looks things up, uses tools) and sends
what it found; a lasting fact is a memory, neither of these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from lore.core.tools import ToolContext, optional_str, required_str
from lore.errors import ConfigError, ToolError

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.llm.base import Message

__all__ = ["CancelTask", "ListTasks", "ScheduleTask", "task_ids_shown"]

_SCHEDULE = (
    "Schedule work Lore does on its own later, once or repeating: at that time Lore runs "
    "one turn in this conversation with `prompt` as the instruction (it may use its tools) "
    "and sends the reply here: 'every weekday at 8, look at the weather and tell me if I "
    "need an umbrella', '每天晚上9点总结今天的笔记', 'каждое утро проверяй мои задачи'. "
    "⚠️ Not set_reminder: a reminder only repeats a fixed text at its time; use this only "
    "when something must be done or looked up then. ⚠️ Not remember: a lasting fact is a "
    "memory. `prompt`: the instruction for that future turn, complete on its own. `when` "
    "and `recurrence` as for set_reminder (ISO-8601 with offset or the user's phrase; "
    "'weekdays 08:00', 'every 2h', cron '0 9 * * 1-5'). The result states the local time "
    "of the first run: tell the user that time."
)
_LIST = (
    "List this conversation's pending scheduled tasks: #id, next run time, prompt, "
    "recurrence, and how the last run went. Tasks only; reminders are list_reminders."
)
_CANCEL = (
    "Cancel a pending scheduled task of this conversation by its #id (from schedule_task "
    "or list_tasks). A reminder is cancel_reminder; a stored fact is forget."
)


class ScheduleTask:
    name = "schedule_task"
    description = _SCHEDULE
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "what to do when it runs"},
            "when": {"type": "string", "description": "ISO-8601 with offset, or a phrase"},
            "recurrence": {"type": "string", "description": "for repeating tasks only"},
        },
        "required": ["prompt"],
    }

    def __init__(self, lore: Services) -> None:
        self._lore = lore

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from lore.reminders import in_words
        from lore.reminders.when import format_local
        from lore.tasks import create_task

        prompt = required_str(args, "prompt")
        when, recurrence = optional_str(args, "when"), optional_str(args, "recurrence")
        settings = self._lore.config.tasks
        zone = _zone(ctx, self._lore.zone)
        task = create_task(
            self._lore.tasks,
            scope=ctx.scope,
            author=ctx.author,
            prompt=prompt,
            when=when,
            recurrence=recurrence,
            now=ctx.now,
            zone=zone,
            channel=ctx.channel,
            trust=_trust(ctx.trust),
            max_rounds=settings.max_rounds,
            max_seconds=settings.max_seconds,
        )
        at = format_local(task.due_at, zone)
        ctx.shown_task_ids.add(task.id)
        ctx.notices.append(f"🗓 task #{task.id} scheduled for {at}")
        result = f"Task #{task.id} scheduled for {at}, {in_words(task.due_at - ctx.now)}"
        if task.recurrence:
            result += f", then repeating {task.recurrence}"
        return result + "."


class ListTasks:
    name = "list_tasks"
    description = _LIST
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, lore: Services) -> None:
        self._lore = lore

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from lore.tasks import describe_task

        tasks = self._lore.tasks.list(ctx.scope)
        if not tasks:
            return "No pending scheduled tasks in this conversation."
        ctx.shown_task_ids.update(task.id for task in tasks)
        lines = [describe_task(task, ctx.now) for task in tasks]
        return f"{len(lines)} pending task(s):\n" + "\n".join(lines)


class CancelTask:
    name = "cancel_task"
    description = _CANCEL
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"id": {"type": "integer", "description": "the task's #id"}},
        "required": ["id"],
    }

    def __init__(self, lore: Services) -> None:
        self._lore = lore

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        task_id = task_number(args.get("id"))
        if task_id not in ctx.shown_task_ids:
            raise ToolError(
                f"#{task_id} was not shown in this conversation; nothing was cancelled. "
                "Call list_tasks and use an #id it shows."
            )
        task = self._lore.tasks.cancel(ctx.scope, task_id, now=ctx.now)  # this scope's only
        ctx.notices.append(f"🗓 task #{task.id} cancelled")
        return f"Cancelled task #{task.id}: {task.prompt}"


# How schedule_task and list_tasks name a task in what they return (above).
_SHOWN = {
    "schedule_task": re.compile(r"^Task #(\d+) "),
    "list_tasks": re.compile(r"^#(\d+) ", re.MULTILINE),
}


def task_ids_shown(messages: Iterable[Message]) -> set[int]:
    """The task ids schedule_task and list_tasks returned in these messages: a task set
    in an earlier turn may be cancelled while that turn is in the history."""
    shown: set[int] = set()
    for message in messages:
        pattern = _SHOWN.get(str(message.get("name"))) if message["role"] == "tool" else None
        if pattern is not None:
            shown.update(int(found) for found in pattern.findall(str(message.get("content"))))
    return shown


def task_number(value: object) -> int:
    """7, "7" or "#7"; not true, 7.5 or "1e3", which int() would quietly turn into ids."""
    if isinstance(value, str) and value.strip().lstrip("#").isdecimal():
        return int(value.strip().lstrip("#"))
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ToolError("'id' must be a task number like 7")


def _trust(value: str) -> Any:
    return value if value in ("owner", "member", "guest") else "guest"


def _zone(ctx: ToolContext, default: tzinfo) -> tzinfo:
    from lore.clock import resolve_zone

    if not ctx.timezone:
        return default
    try:
        return resolve_zone(ctx.timezone)
    except ConfigError:
        return default
