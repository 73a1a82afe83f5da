"""Slash commands for memory: /memory, /remember TEXT, /forget ID. They work without a model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.agent.commands import Command, CommandFailed
from lore.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from lore.agent.conversation import Conversation

__all__ = ["make_commands"]


def make_commands() -> list[Command]:
    return [
        Command("memory", "show the memory block exactly as the model sees it", _show),
        Command("remember", "note a long-term fact for this conversation", _remember, "TEXT"),
        Command("forget", "erase a memory by its #id", _forget, "ID"),
    ]


async def _show(conversation: Conversation, args: str) -> str:
    from lore.memory.block import render_memory_block

    lore = conversation.lore
    block = render_memory_block(
        lore.memory,
        conversation.scope,
        budget_chars=lore.config.memory.budget_chars,
        now=lore.clock.now(),
        zone=lore.zone,
    )
    changes = lore.memory.recent_changes(conversation.scope, limit=5)
    if not changes:
        return block.text
    lines = [block.text, "", "Recent changes:"]
    for entry in changes:
        local = entry.at.astimezone(lore.zone)
        lines.append(
            f"  {local:%Y-%m-%d %H:%M}  {_VERBS.get(entry.action, entry.action)} "
            f"#{entry.memory_id} by {entry.actor} ({_VIA.get(entry.via, entry.via)})"
        )
    return "\n".join(lines)


_VERBS = {"add": "noted", "update": "updated", "forget": "forgot", "import": "imported"}
_VIA = {
    "extraction": "automatically, from the conversation",
    "tool": "by the assistant",
    "command": "with a slash command",
    "cli": "from the command line",
    "api": "through the API",
}


async def _remember(conversation: Conversation, args: str) -> str:
    if not args.strip():
        raise CommandFailed("Usage: /remember TEXT")
    try:
        memory, created = conversation.lore.memory.remember(
            conversation.scope,
            args,
            author=conversation.author,
            via="command",
            now=conversation.lore.clock.now(),
        )
    except InvalidInputError as exc:
        raise CommandFailed(f"Not remembered: {exc}") from None
    if not created:
        return f"Already noted as #{memory.id}."
    return f"Noted #{memory.id}: {memory.content}"


async def _forget(conversation: Conversation, args: str) -> str:
    text = args.strip().lstrip("#")
    if not text.isdecimal():
        raise CommandFailed("Usage: /forget ID (the number after # in /memory)")
    try:
        conversation.lore.memory.forget(
            conversation.scope,
            int(text),
            by=conversation.author,
            via="command",
            now=conversation.lore.clock.now(),
        )
    except (NotFoundError, InvalidInputError) as exc:
        raise CommandFailed(f"Nothing forgotten: {exc}") from None
    return f"Forgot #{text}."
