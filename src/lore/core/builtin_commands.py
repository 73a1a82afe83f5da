"""Slash commands every conversation has: /help, /status, /exit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.commands import Command

if TYPE_CHECKING:
    from lore.core.conversation import Conversation

__all__ = ["ExitChat", "make_commands"]


class ExitChat(Exception):
    """Raised by /exit; the terminal ends the chat."""


async def _help(conversation: Conversation, args: str) -> str:
    return conversation.lore.commands.help_text()


async def _status(conversation: Conversation, args: str) -> str:
    lore = conversation.lore
    session = conversation.session
    session.refresh()
    lines = [
        f"model:         {lore.config.model_spec()}",
        f"conversation:  {conversation.scope} (session {session.meta.session_id[:8]})",
        f"messages:      {len(session.messages)} ({session.meta.last_consolidated} consolidated)",
        f"speaking as:   {conversation.author}",
        f"home:          {lore.config.home}",
    ]
    return "\n".join(lines)


async def _exit(conversation: Conversation, args: str) -> str:
    raise ExitChat()


def make_commands() -> list[Command]:
    return [
        Command("help", "list the commands", _help),
        Command("status", "model, conversation and session in use", _status),
        Command("exit", "leave the chat (also Ctrl+D)", _exit),
    ]
