"""The slash-command registry: one table drives dispatch, `/help` and tab completion.

A handler receives the command's context (who, where, the services) and the text after
the command name, and returns what to show the user (or None); the dispatcher emits it
as a `CommandOutput` event. Unknown commands never reach the model. Channels may add
commands of their own (the terminal's /exit) and wording of their own (key bindings).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lore.errors import LoreError
from lore.events import CommandOutput, Emit, Inbound, Trust

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.ports.sessions import LiveSession

__all__ = ["Command", "CommandContext", "CommandRegistry", "Handler", "is_command", "run_command"]


@dataclass(frozen=True)
class CommandContext:
    """Who runs a command, where, and with what."""

    lore: Services
    scope: str
    author: str
    channel: str
    trust: Trust
    emit: Emit

    @property
    def session(self) -> LiveSession:
        return self.lore.session(self.scope)


Handler = Callable[[CommandContext, str], Awaitable[str | CommandOutput | None]]

_COMMAND = re.compile(r"/[^\W\d_][\w-]*(?:\s|$)")


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
        return "\n".join(lines)


async def run_command(services: Services, inbound: Inbound, emit: Emit) -> CommandOutput:
    """Dispatch one slash command and emit what it says; an unknown name is refused."""
    name, *args = inbound.text.strip()[1:].split(maxsplit=1)
    command = services.commands.get(name)
    if command is None:
        output = CommandOutput(services.commands.unknown_message(name), ok=False)
    else:
        ctx = CommandContext(
            services, inbound.scope, inbound.author, inbound.channel, inbound.trust, emit
        )
        try:
            said = await command.handler(ctx, args[0] if args else "")
        except LoreError as exc:  # refused: bad id, bad input
            said = CommandOutput(str(exc), ok=False)
        output = said if isinstance(said, CommandOutput) else CommandOutput(said or "")
    emit(output)
    return output
