"""The session commands: /new archives this session and starts a fresh one; /why shows
what a reply rested on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.commands import Command
from lore.errors import LoreError, quoted
from lore.events import CommandOutput
from lore.text import counted

if TYPE_CHECKING:
    from lore.core.commands import CommandContext

__all__ = ["session_commands"]


async def _new(conversation: CommandContext, args: str) -> str | CommandOutput:
    from lore.sessions.closing import new_session

    lore = conversation.lore
    session = conversation.session
    session.refresh()
    users = sum(1 for m in session.messages if m["role"] == "user")
    try:
        entry = await new_session(lore, conversation.scope, session=session, emit=conversation.emit)
    except LoreError as exc:
        return CommandOutput(f"The session was not closed, nothing was lost: {exc}", ok=False)
    if entry is None:
        return "New session started."
    settings = lore.config.session_memory
    summary = settings.enabled and users >= settings.min_user_messages
    return (
        f"New session started. The previous one ({counted(entry.message_count, 'message')})"
        " is archived "
        f"as {entry.transcript_path}" + ("; its summary is being written." if summary else ".")
    )


async def _why(conversation: CommandContext, args: str) -> str | CommandOutput:
    from lore.sessions.why import explain, last_reply, render_why, reply_at

    session = conversation.session
    session.refresh()
    wanted = args.strip()
    if not wanted:
        index = last_reply(session.messages)
        if index is None:
            return "No reply in this session yet."
    elif wanted.isdigit():
        index = int(wanted)
    else:
        return CommandOutput(f"/why takes a message number, not {quoted(wanted)}", ok=False)
    try:
        message = reply_at(session.messages, index)
    except LoreError as exc:
        return CommandOutput(f"{exc}; /why alone explains the last reply", ok=False)
    lore = conversation.lore
    return render_why(explain(lore.memory, conversation.scope, index, message, lore.zone))


def session_commands() -> list[Command]:
    return [
        Command("new", "archive this session and start a fresh one", _new),
        Command("why", "what the last reply (or message N) rested on", _why, "[N]"),
    ]
