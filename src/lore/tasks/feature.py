"""The scheduled tasks feature: schedule_task, list_tasks, cancel_task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["tasks_feature"]


def tasks_feature(lore: Services) -> Feature:
    from lore.tasks.tools import CancelTask, ListTasks, ScheduleTask

    return Feature("tasks", tools=[ScheduleTask(lore), ListTasks(lore), CancelTask(lore)])
