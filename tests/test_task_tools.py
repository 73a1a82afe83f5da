"""The model's task tools, called the way a turn calls them (through the registry)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from lore.core.tools import ToolContext, ToolRegistry, ToolResult
from lore.llm.base import ToolCall
from lore.runtime import Runtime
from lore.tasks.feature import tasks_feature
from lore.tasks.tools import task_ids_shown
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # Monday 17:00 in Taipei


def context(scope: str = "line:group:family", **extra: Any) -> ToolContext:
    values: dict[str, Any] = {
        "scope": scope, "author": "john", "session_id": "s1", "message_index": 0, "now": NOW,
        "timezone": "Asia/Taipei", "channel": "line", "trust": "member", **extra,
    }  # fmt: skip
    return ToolContext(**values)


async def call(lore: Runtime, name: str, ctx: ToolContext, **args: Any) -> ToolResult:
    registry = ToolRegistry(tasks_feature(lore).tools)
    return await registry.call(ToolCall("c1", name, json.dumps(args)), ctx)


async def test_schedule_task_states_the_first_run_and_keeps_the_speakers_trust(
    lore: Runtime,
) -> None:
    ctx = context()
    result = await call(
        lore, "schedule_task", ctx, prompt="看看明天的天气", when="明天早上8点", recurrence="daily"
    )
    assert result.content == (
        "Task #1 scheduled for Tue 2026-12-01 08:00 (Asia/Taipei), in 15 h, "
        "then repeating daily 08:00."
    )
    [task] = lore.tasks.list("line:group:family")
    assert (task.trust, task.channel, task.author) == ("member", "line", "john")
    assert ctx.notices == ["🗓 task #1 scheduled for Tue 2026-12-01 08:00 (Asia/Taipei)"]


async def test_a_time_that_never_comes_is_an_error_the_model_reads(lore: Runtime) -> None:
    result = await call(lore, "schedule_task", context(), prompt="x", when="вчера")
    assert result.is_error and "not in the future" in result.content
    assert lore.tasks.list(None, include_done=True) == []


async def test_cancel_takes_only_an_id_this_conversation_was_shown(lore: Runtime) -> None:
    ctx = context()
    await call(lore, "schedule_task", ctx, prompt="x", when="in 1 hour")
    other = context("telegram:-5")
    await call(lore, "schedule_task", other, prompt="y", when="in 1 hour")
    guessed = await call(lore, "cancel_task", context(), id=1)
    assert guessed.is_error and "was not shown" in guessed.content
    elsewhere = await call(lore, "cancel_task", ctx, id=2)
    assert elsewhere.is_error
    listed = context()
    assert "#1 " in (await call(lore, "list_tasks", listed)).content
    done = await call(lore, "cancel_task", listed, id="#1")
    assert done.content == "Cancelled task #1: x"
    assert [t.id for t in lore.tasks.list(None)] == [2]


def test_ids_shown_in_the_history_are_the_ones_the_tools_returned() -> None:
    messages: list[Any] = [
        {"role": "tool", "name": "schedule_task", "content": "Task #4 scheduled for …"},
        {"role": "tool", "name": "list_tasks", "content": "2 pending task(s):\n#5 Mon …\n#6 Tue …"},
        {"role": "tool", "name": "list_reminders", "content": "#9 Mon …"},
        {"role": "assistant", "content": "#7 is yours"},
    ]
    assert task_ids_shown(messages) == {4, 5, 6}
