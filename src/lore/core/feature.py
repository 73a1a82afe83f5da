"""A feature: what one capability (memory, reminders, search, sessions) adds to a turn.

The composition root builds each feature once, on first need, from the services it
uses; the core collects their contributions. Nothing is wired by module-name strings.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lore.core.commands import Command
    from lore.core.tools import Tool, ToolContext
    from lore.core.turn import CompletedTurn
    from lore.events import Emit
    from lore.ports.sessions import ArchivedSession

__all__ = [
    "AfterTurn",
    "ContextSection",
    "Feature",
    "Forgotten",
    "MemoryForgotten",
    "SessionClosed",
]

# A system-prompt section: given the turn, its text or None.
ContextSection = Callable[["ToolContext"], "str | None"]
# Work after a persisted turn, in the background; events go to `emit`.
AfterTurn = Callable[["CompletedTurn", "Emit"], Awaitable[None]]
# Work after a session was archived (/new, idle close).
SessionClosed = Callable[["ArchivedSession", "Emit | None"], None]


@dataclass(frozen=True)
class Forgotten:
    """A memory just forgotten, as what still carries it needs to know: the texts it
    had (every version, and the message it came from) and the turns that said it."""

    scope: str
    texts: tuple[str, ...]
    turns: tuple[tuple[str, int], ...]  # (session id, index of a message of the turn)


# Work right after a memory was forgotten (search leaves what restated it out).
MemoryForgotten = Callable[[Forgotten], None]


@dataclass(frozen=True)
class Feature:
    name: str
    tools: Sequence[Tool] = ()
    commands: Sequence[Command] = ()
    sections: Sequence[ContextSection] = ()  # placed after MEMORY.md, before runtime context
    after_turn: Sequence[AfterTurn] = ()
    session_closed: Sequence[SessionClosed] = ()
    memory_forgotten: Sequence[MemoryForgotten] = ()
    # Tools only the owner's conversations may see (file and shell tools).
    owner_only: bool = False
