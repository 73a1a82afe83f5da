"""The slash-command registry: one table drives dispatch, `/help` and tab completion.

The command's types live with the feature that contributes them (`lore.core.feature`):
a command's context holds the assembled services, which hold the features. A handler
receives the command's context (who, where, the services) and the text after
the command name, and returns what to show the user (or None); the dispatcher emits it
as a `CommandOutput` event. Unknown commands never reach the model. Channels may add
commands of their own (the terminal's /exit) and wording of their own (key bindings).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lore.core.feature import Command, CommandContext, CommandRegistry, Handler
from lore.errors import LoreError
from lore.events import CommandOutput, Emit, Inbound

if TYPE_CHECKING:
    from lore.core.feature import Assembled

__all__ = ["Command", "CommandContext", "CommandRegistry", "Handler", "is_command", "run_command"]


_COMMAND = re.compile(r"/[^\W\d_][\w-]*(?:\s|$)")


def is_command(text: str) -> bool:
    """A message is a command when its first word is a slash and a name ("/help",
    "/dream-log abc"); one that starts with a path ("/etc/hosts 是什么?") is a message."""
    return _COMMAND.match(text.strip()) is not None


async def run_command(services: Assembled, inbound: Inbound, emit: Emit) -> CommandOutput:
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
