"""The history window: the legal, budgeted slice of a live session sent to the model.

Legal means: nothing already consolidated, nothing the user cancelled, it starts at a
user message (never an orphan tool result or a reply without its question), every tool
call has its results right after it and every tool result its call (a transcript torn by
a crash or with a corrupt line may break a pair; providers reject such a request), and
it fits the token budget.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lore.llm.base import Message
from lore.messages import without_tool_calls

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
    while first < len(messages) and messages[first]["role"] != "user":
        used -= count(messages[first])
        first += 1
    kept = _paired(messages[first:])
    if len(kept) != len(messages) - first:
        used = sum(count(message) for message in kept)
    return Window(first, kept, max(used, 0))


def _paired(messages: Sequence[Message]) -> list[Message]:
    """The messages with every incomplete tool exchange taken out: an assistant message
    whose calls do not all have their results right after it keeps only its text, and a
    tool result without its call goes."""
    kept: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("cancelled"):
            continue  # a turn the user cancelled never happened, as far as the model knows
        if message["role"] == "tool":
            continue  # not right after its call
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        if not calls:
            kept.append(message)
            continue
        results: list[Message] = []
        while index < len(messages) and messages[index]["role"] == "tool":
            results.append(messages[index])
            index += 1
        answered = Counter(result.get("tool_call_id") for result in results)
        if answered == Counter(call["id"] for call in calls):
            kept += [message, *results]
        elif message.get("content"):
            kept.append(without_tool_calls(message))
    return kept
