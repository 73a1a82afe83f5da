"""Slash commands for memory: /memory, /remember TEXT, /forget ID [everywhere [yes]].
They work without a model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.agent.commands import Command
from lore.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from lore.agent.conversation import Conversation

__all__ = ["make_commands"]


def make_commands() -> list[Command]:
    return [
        Command("memory", "show the memory block exactly as the model sees it", _show),
        Command("remember", "note a long-term fact for this conversation", _remember, "TEXT"),
        Command(
            "forget",
            "erase a memory by its #id; `everywhere` also finds every copy of it",
            _forget,
            "ID [everywhere [yes]]",
        ),
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
        return "Usage: /remember TEXT"
    try:
        memory, created = conversation.lore.memory.remember(
            conversation.scope,
            args,
            author=conversation.author,
            via="command",
            now=conversation.lore.clock.now(),
        )
    except InvalidInputError as exc:
        return f"Not remembered: {exc}"
    if not created:
        return f"Already noted as #{memory.id}."
    return f"Noted #{memory.id}: {memory.content}"


async def _forget(conversation: Conversation, args: str) -> str:
    words = args.split()
    text = words[0].lstrip("#") if words else ""
    if not text.isdecimal() or words[1:] not in ([], ["everywhere"], ["everywhere", "yes"]):
        return "Usage: /forget ID [everywhere [yes]] (ID: the number after # in /memory)"
    if words[1:]:
        return _forget_everywhere(conversation, int(text), erase=words[1:] == ["everywhere", "yes"])
    try:
        conversation.lore.memory.forget(
            conversation.scope,
            int(text),
            by=conversation.author,
            via="command",
            now=conversation.lore.clock.now(),
        )
    except (NotFoundError, InvalidInputError) as exc:
        return f"Nothing forgotten: {exc}"
    return f"Forgot #{text}."


def _forget_everywhere(conversation: Conversation, memory_id: int, *, erase: bool) -> str:
    from lore.memory.purge import forget_everywhere

    lore = conversation.lore
    if not lore.config.is_owner_scope(conversation.scope):
        return "Nothing forgotten: only the owner's conversations can erase text everywhere."
    try:
        lines = forget_everywhere(
            lore,
            conversation.scope,
            memory_id=memory_id,
            erase=erase,
            by=conversation.author,
            via="command",
            confirm=f"Type /forget {memory_id} everywhere yes to erase all of it.",
        )
    except (NotFoundError, InvalidInputError) as exc:
        return f"Nothing forgotten: {exc}"
    return "\n".join(lines)
