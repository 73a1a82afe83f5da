"""The history window: the legal, budgeted slice of a live session sent to the model.

Legal means: nothing already consolidated, it starts at a user message (never an orphan
tool result or a reply without its question), and it fits the token budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lore.llm.base import Message

__all__ = ["Window", "history_window"]


@dataclass(frozen=True)
class Window:
    start: int  # index of the first message in the session
    messages: list[Message]
    tokens: int


def history_window(
    messages: Sequence[Message],
    *,
    start: int,
    budget: int,
    count: Callable[[Message], int],
) -> Window:
    """The newest messages after `start` that fit `budget`, cut back to a user message."""
    start = max(0, min(start, len(messages)))
    first = len(messages)
    used = 0
    for index in range(len(messages) - 1, start - 1, -1):
        cost = count(messages[index])
        if used + cost > budget:
            break
        used += cost
        first = index
    # Advance to the first user message, so no tool result or reply is orphaned.
    while first < len(messages) and messages[first].get("role") != "user":
        used -= count(messages[first])
        first += 1
    return Window(first, list(messages[first:]), max(used, 0))
