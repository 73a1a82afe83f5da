"""The reminders feature: set_reminder, list_reminders, cancel_reminder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["reminders_feature"]


def reminders_feature(lore: Services) -> Feature:
    from lore.reminders.tools import CancelReminder, ListReminders, SetReminder

    store, zone = lore.reminders, lore.zone
    return Feature(
        "reminders",
        tools=[SetReminder(store, zone), ListReminders(store, zone), CancelReminder(store, zone)],
    )
