"""Slash commands for memory: /memory, /remember TEXT, /forget ID [everywhere [yes]] (no
model needed), and Dream's /dream, /dream-log, /dream-restore."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.commands import Command
from lore.errors import InvalidInputError, LoreError, NotFoundError
from lore.events import CommandOutput

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from lore.core.commands import CommandContext
    from lore.core.services import Services

__all__ = ["dream_commands", "memory_commands"]


def memory_commands() -> list[Command]:
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


def dream_commands() -> list[Command]:
    return [
        Command("dream", "fold recent history into MEMORY.md, USER.md, SOUL.md now", _dream),
        Command("dream-log", "show what a Dream changed (latest, or SHA)", _dream_log, "[SHA]"),
        Command(
            "dream-restore",
            "list Dream versions, or undo one as a new version",
            _dream_restore,
            "[SHA]",
        ),
    ]


_NOT_OWNER = (
    "Dream and the curated files belong to the owner's conversations; "
    "this conversation cannot run or change them."
)


async def _show(conversation: CommandContext, args: str) -> str | CommandOutput:
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
    "import": "imported from another assistant",
}


async def _remember(conversation: CommandContext, args: str) -> str | CommandOutput:
    if not args.strip():
        return CommandOutput("Usage: /remember TEXT", ok=False)
    try:
        memory, created = conversation.lore.memory.remember(
            conversation.scope,
            args,
            author=conversation.author,
            via="command",
            now=conversation.lore.clock.now(),
        )
    except InvalidInputError as exc:
        return CommandOutput(f"Not remembered: {exc}", ok=False)
    if not created:
        return f"Already noted as #{memory.id}."
    return f"Noted #{memory.id}: {memory.content}"


async def _forget(conversation: CommandContext, args: str) -> str | CommandOutput:
    from lore.core.forgetting import KEPT_IN_TRANSCRIPT, forget_memory

    words = args.split()
    text = words[0].lstrip("#") if words else ""
    if not text.isdecimal() or words[1:] not in ([], ["everywhere"], ["everywhere", "yes"]):
        return CommandOutput(
            "Usage: /forget ID [everywhere [yes]] (ID: the number after # in /memory)", ok=False
        )
    if words[1:]:
        return _forget_everywhere(conversation, int(text), erase=words[1:] == ["everywhere", "yes"])
    try:
        forget_memory(
            conversation.lore,
            conversation.scope,
            int(text),
            by=conversation.author,
            via="command",
            now=conversation.lore.clock.now(),
        )
    except (NotFoundError, InvalidInputError) as exc:
        return CommandOutput(f"Nothing forgotten: {exc}", ok=False)
    return f"Forgot #{text}. {KEPT_IN_TRANSCRIPT}"


def _forget_everywhere(
    conversation: CommandContext, memory_id: int, *, erase: bool
) -> str | CommandOutput:
    from lore.memory.purge import purge_everywhere

    lore = conversation.lore
    if not lore.config.is_owner_scope(conversation.scope):
        return CommandOutput(
            "Nothing forgotten: only the owner's conversations can erase text everywhere.",
            ok=False,
        )
    try:
        report = purge_everywhere(
            lore,
            conversation.scope,
            memory_id=memory_id,
            erase=erase,
            by=conversation.author,
            via="command",
        )
    except (NotFoundError, InvalidInputError) as exc:
        return CommandOutput(f"Nothing forgotten: {exc}", ok=False)
    return "\n".join(report.lines(f"Type /forget {memory_id} everywhere yes to erase all of it."))


async def _dream(conversation: CommandContext, args: str) -> str | CommandOutput:
    from lore.memory.dream import run_dream

    if not conversation.lore.config.is_owner_scope(conversation.scope):
        return CommandOutput(_NOT_OWNER, ok=False)
    try:
        result = await run_dream(conversation.lore)
    except LoreError as exc:  # DreamBusy, or git refusing
        return CommandOutput(str(exc), ok=False)
    return CommandOutput(result.describe(), ok=result.status != "failed")


async def _dream_log(conversation: CommandContext, args: str) -> str | CommandOutput:
    from lore.memory.dream_history import dream_log

    if not conversation.lore.config.is_owner_scope(conversation.scope):
        return CommandOutput(_NOT_OWNER, ok=False)
    try:
        return dream_log(conversation.lore.versions, args.strip() or None)
    except LoreError as exc:  # no such version, or no version history
        return CommandOutput(str(exc), ok=False)


async def _dream_restore(conversation: CommandContext, args: str) -> str | CommandOutput:
    from lore.memory.dream_history import dream_restore, dream_versions

    if not conversation.lore.config.is_owner_scope(conversation.scope):
        return CommandOutput(_NOT_OWNER, ok=False)
    sha = args.strip()
    try:
        if not sha:
            return dream_versions(conversation.lore.versions)
        return dream_restore(conversation.lore.versions, _dream_lock(conversation.lore), sha)
    except LoreError as exc:  # no such version, or Dream is running
        return CommandOutput(str(exc), ok=False)


def _dream_lock(lore: Services) -> AbstractContextManager[bool]:
    return lore.exclusive("dream", lore.workspace.memory_dir / ".dream.lock")
