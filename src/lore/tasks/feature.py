"""The scheduled tasks feature: schedule_task, list_tasks, cancel_task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.core.tools import ToolContext

__all__ = ["tasks_feature"]


def tasks_feature(lore: Services) -> Feature:
    from lore.tasks.tools import CancelTask, ListTasks, ScheduleTask

    def shown_before(ctx: ToolContext) -> str | None:
        """No text: the ids the history still shows become cancellable this turn."""
        from lore.tasks.tools import task_ids_shown

        session = lore.session(ctx.scope)
        ctx.shown_task_ids.update(
            task_ids_shown(session.messages[session.meta.last_consolidated :])
        )
        return None

    return Feature(
        "tasks",
        tools=[ScheduleTask(lore), ListTasks(lore), CancelTask(lore)],
        sections=[shown_before],
    )
