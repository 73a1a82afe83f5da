"""The reminders feature: set_reminder, list_reminders, cancel_reminder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.core.tools import ToolContext

__all__ = ["reminders_feature"]


def reminders_feature(lore: Services) -> Feature:
    from lore.reminders.tools import CancelReminder, ListReminders, SetReminder

    store, zone = lore.reminders, lore.zone

    def shown_before(ctx: ToolContext) -> str | None:
        """No text: the ids the history still shows become cancellable this turn."""
        from lore.reminders.tools import reminder_ids_shown

        session = lore.session(ctx.scope)
        ctx.shown_reminder_ids.update(
            reminder_ids_shown(session.messages[session.meta.last_consolidated :])
        )
        return None

    return Feature(
        "reminders",
        tools=[SetReminder(store, zone), ListReminders(store, zone), CancelReminder(store, zone)],
        sections=[shown_before],
    )
