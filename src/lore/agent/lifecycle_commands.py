"""Session lifecycle commands: /new, /dream, /dream-log, /dream-restore."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.agent.commands import Command, CommandFailed
from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.agent.conversation import Conversation

__all__ = ["make_commands"]

_NOT_OWNER = (
    "Dream and the curated files belong to the owner's conversations; "
    "this conversation cannot run or change them."
)


async def _new(conversation: Conversation, args: str) -> str:
    from lore.sessions.closing import new_session

    lore = conversation.lore
    session = conversation.session
    session.refresh()
    users = sum(1 for m in session.messages if m.get("role") == "user")
    try:
        entry = await new_session(lore, conversation.scope, session=session, emit=conversation.emit)
    except LoreError as exc:
        raise CommandFailed(f"The session was not closed, nothing was lost: {exc}") from None
    if entry is None:
        return "New session started."
    settings = lore.config.session_memory
    summary = settings.enabled and users >= settings.min_user_messages
    return (
        f"New session started. The previous one ({entry.message_count} messages) is archived "
        f"as {entry.transcript_path}" + ("; its summary is being written." if summary else ".")
    )


async def _dream(conversation: Conversation, args: str) -> str:
    from lore.memory.dream import run_dream

    if not conversation.lore.config.is_owner_scope(conversation.scope):
        raise CommandFailed(_NOT_OWNER)
    try:
        result = await run_dream(conversation.lore)
    except LoreError as exc:  # DreamBusy, or git refusing
        raise CommandFailed(str(exc)) from None
    return result.describe()


async def _dream_log(conversation: Conversation, args: str) -> str:
    from lore.memory.workspace_git import dream_log

    if not conversation.lore.config.is_owner_scope(conversation.scope):
        raise CommandFailed(_NOT_OWNER)
    try:
        return dream_log(conversation.lore, args.strip() or None)
    except LoreError as exc:
        raise CommandFailed(str(exc)) from None


async def _dream_restore(conversation: Conversation, args: str) -> str:
    from lore.memory.workspace_git import dream_restore, dream_versions

    if not conversation.lore.config.is_owner_scope(conversation.scope):
        raise CommandFailed(_NOT_OWNER)
    sha = args.strip()
    try:
        if not sha:
            return dream_versions(conversation.lore)
        return dream_restore(conversation.lore, sha)
    except LoreError as exc:
        raise CommandFailed(str(exc)) from None


def make_commands() -> list[Command]:
    return [
        Command("new", "archive this session and start a fresh one", _new),
        Command("dream", "fold recent history into MEMORY.md, USER.md, SOUL.md now", _dream),
        Command("dream-log", "show what a Dream changed (latest, or SHA)", _dream_log, "[SHA]"),
        Command(
            "dream-restore",
            "list Dream versions, or undo one as a new version",
            _dream_restore,
            "[SHA]",
        ),
    ]
