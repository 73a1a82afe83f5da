"""The sessions feature: session_list and session_history over the exact archive, and
/new (the memory feature writes each closed session's summary)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["sessions_feature"]


def sessions_feature(lore: Services) -> Feature:
    from lore.sessions.commands import session_commands
    from lore.sessions.tools import SessionHistoryTool, SessionListTool

    return Feature(
        "sessions",
        tools=[
            SessionListTool(lore.sessions, lore.zone),
            SessionHistoryTool(lore.sessions, lore.zone),
        ],
        commands=session_commands(),
    )
