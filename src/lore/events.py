"""Events the session layer emits; channels (terminal, HTTP, ...) render them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "Emit",
    "Event",
    "Notice",
    "ReminderDue",
    "ReplyFailed",
    "ReplyFinished",
    "TextDelta",
    "ToolCallEvent",
]


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    name: str
    arguments: str
    result: str
    is_error: bool


@dataclass(frozen=True)
class ReplyFinished:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ReplyFailed:
    message: str
    cancelled: bool = False


@dataclass(frozen=True)
class Notice:
    """A quiet line for the user: a memory noted, a session archived, a warning."""

    text: str
    level: str = "info"  # info | warning


@dataclass(frozen=True)
class ReminderDue:
    scope: str
    text: str
    reminder_id: int
    late: bool = False
    mention: str = ""


Event = TextDelta | ToolCallEvent | ReplyFinished | ReplyFailed | Notice | ReminderDue
Emit = Callable[[Event], None]
