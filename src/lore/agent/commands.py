"""The slash-command registry: one table drives dispatch, `/help` and tab completion.

A handler receives the conversation and the text after the command name, and returns
what to show the user (or None), or raises `CommandFailed` with what went wrong.
Unknown commands never reach the model.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lore.agent.conversation import Conversation

from lore.errors import LoreError

__all__ = ["Command", "CommandFailed", "CommandRegistry", "Handler", "is_command"]

Handler = Callable[["Conversation", str], Awaitable[str | None]]

_COMMAND = re.compile(r"/[^\W\d_][\w-]*(?:\s|$)")


class CommandFailed(LoreError):
    """A command that could not do what was asked ("/forget 99" with no #99): its message
    is what the user sees, and a one-shot run (`lore chat -m`) exits non-zero."""


@dataclass(frozen=True)
class Command:
    name: str  # without the slash
    summary: str
    handler: Handler
    usage: str = ""  # e.g. "ID" for "/forget ID"


def is_command(text: str) -> bool:
    """A message is a command when its first word is a slash and a name ("/help",
    "/dream-log abc"); one that starts with a path ("/etc/hosts 是什么?") is a message."""
    return _COMMAND.match(text.strip()) is not None


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
        lines.append("Enter sends; Alt+Enter (Esc Enter) inserts a new line; Ctrl+D exits.")
        return "\n".join(lines)
