"""A feature: what one capability (memory, reminders, search, sessions) adds to a turn.

The composition root builds each feature once, on first need, from the services it
uses; the core collects their contributions. Nothing is wired by module-name strings.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lore.core.services import Services

if TYPE_CHECKING:
    from lore.core.tools import Tool, ToolContext, ToolSource
    from lore.events import CommandOutput, Emit, Trust
    from lore.llm.base import Message
    from lore.ports.sessions import ArchivedSession, LiveSession

__all__ = [
    "AfterTurn",
    "Assembled",
    "Command",
    "CommandContext",
    "CommandRegistry",
    "CompletedTurn",
    "ContextSection",
    "Feature",
    "Forgotten",
    "Handler",
    "MemoryForgotten",
    "SessionClosed",
]


@dataclass(frozen=True)
class CompletedTurn:
    """What background work after a turn gets to see."""

    scope: str
    author: str
    channel: str
    session_id: str
    user_index: int  # index of the user message in the live session
    user_text: str
    reply_text: str
    messages: list[Message]  # user message + everything the turn added
    fixed_tokens: int = 0  # system prompt + tool schemas + the user message, as sent
    # The exact count, when `fixed_tokens` is only an upper bound (the tokenizer unloaded).
    count_fixed: Callable[[], int] | None = None


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
class CommandContext:
    """Who runs a command, where, and with what."""

    lore: Assembled
    scope: str
    author: str
    channel: str
    trust: Trust
    emit: Emit

    @property
    def session(self) -> LiveSession:
        return self.lore.session(self.scope)


Handler = Callable[[CommandContext, str], Awaitable["str | CommandOutput | None"]]


@dataclass(frozen=True)
class Command:
    name: str  # without the slash
    summary: str
    handler: Handler
    usage: str = ""  # e.g. "ID" for "/forget ID"


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
    # Tools found at run time (an MCP server's), always owner-only.
    tool_sources: Sequence[ToolSource] = ()
    # Work when Lore stops (the runtime's aclose): stop what the feature started.
    on_close: Sequence[Callable[[], Awaitable[None]]] = ()


class Assembled(Services, Protocol):
    """The services with the features the composition root built on them, and the
    commands those features (and the core) registered: what the turn, a session's close
    and forgetting a memory go through."""

    @property
    def features(self) -> list[Feature]: ...

    @property
    def commands(self) -> CommandRegistry: ...


class CommandRegistry:
    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._commands: dict[str, Command] = {}
        for command in commands:
            self.add(command)

    def add(self, command: Command) -> None:
        if command.name in self._commands:
            raise ValueError(f"command /{command.name} registered twice")
        self._commands[command.name] = command

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def names(self) -> list[str]:
        return sorted(self._commands)

    def __iter__(self) -> Iterator[Command]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def suggest(self, name: str) -> str | None:
        close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.5)
        return close[0] if close else None

    def unknown_message(self, name: str) -> str:
        guess = self.suggest(name)
        hint = f" — did you mean /{guess}?" if guess else " — type /help for the list"
        return f"Unknown command /{name}{hint}"

    def help_text(self) -> str:
        width = max((len(c.name) + len(c.usage) for c in self), default=0) + 3
        lines = ["Commands:"]
        for command in self:
            label = f"/{command.name}" + (f" {command.usage}" if command.usage else "")
            lines.append(f"  {label.ljust(width)} {command.summary}")
        return "\n".join(lines)
