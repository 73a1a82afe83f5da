"""What flows through the bus: one inbound message in, typed events out.

A channel (terminal, HTTP, Telegram, LINE) turns what a person typed into an `Inbound`
and renders the events that come back; the core never knows which channel it serves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "TRUST_LEVELS",
    "CommandOutput",
    "Emit",
    "Event",
    "Inbound",
    "Notice",
    "ReminderDue",
    "ReplyFailed",
    "ReplyFinished",
    "TextDelta",
    "ToolCallEvent",
    "Trust",
]

# owner: the person Lore belongs to; member: someone in one of the owner's groups;
# guest: anyone else a channel lets through (an API client with a limited token).
Trust = Literal["owner", "member", "guest"]
TRUST_LEVELS: tuple[Trust, ...] = ("owner", "member", "guest")


@dataclass(frozen=True)
class Inbound:
    """One message as a channel hands it to the bus."""

    scope: str  # conversation key, e.g. "cli:default", "line:group:C123"
    channel: str  # "cli", "api", "telegram", "line", ...
    author: str  # who wrote this message (a group has many)
    text: str
    trust: Trust = "owner"
    message_id: str = ""  # the channel's id for it, when it has one
    author_id: str = ""  # the channel's id of the author (to mention them later)
    # False: keep it in the conversation without answering (a group message that was not
    # addressed to Lore), so the context is there when someone asks.
    respond: bool = True
    # The project folder the owner chose to work in (file tools, bootstrap files).
    project: Path | None = None
    # A scheduled task's own budget of tool rounds (None: the configured `max_tool_rounds`).
    max_tool_rounds: int | None = None


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
    retry_after: int | None = None  # seconds: the failure is passing (the database is down)


@dataclass(frozen=True)
class Notice:
    """A quiet line for the user: a memory noted, a session archived, a warning."""

    text: str
    level: str = "info"  # info | warning


@dataclass(frozen=True)
class CommandOutput:
    """What a slash command has to say; `ok` is False when it refused or failed."""

    text: str
    ok: bool = True


@dataclass(frozen=True)
class ReminderDue:
    scope: str
    text: str
    reminder_id: int
    late: bool = False
    mention: str = ""  # the person who set it, for channels that can mention
    mark: str = "⏰"  # how it is marked: a scheduled task's reply 🗓, the heartbeat's 💓


Event = (
    TextDelta | ToolCallEvent | ReplyFinished | ReplyFailed | Notice | CommandOutput | ReminderDue
)
Emit = Callable[[Event], None]
