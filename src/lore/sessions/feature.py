"""The sessions feature: session_list and session_history over the exact archive, /new,
and a summary written in the background for every closed session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.events import Emit
    from lore.ports.sessions import ArchivedSession

__all__ = ["sessions_feature"]


def sessions_feature(lore: Services) -> Feature:
    from lore.sessions.closing import schedule_summary
    from lore.sessions.commands import session_commands
    from lore.sessions.tools import SessionHistoryTool, SessionListTool

    def summarise(entry: ArchivedSession, emit: Emit | None) -> None:
        schedule_summary(lore, entry, emit=emit)

    return Feature(
        "sessions",
        tools=[
            SessionListTool(lore.sessions, lore.zone),
            SessionHistoryTool(lore.sessions, lore.zone),
        ],
        commands=session_commands(),
        session_closed=[summarise],
    )
