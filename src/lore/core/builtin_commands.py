"""Slash commands every conversation has: /help and /status."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.commands import Command, CommandContext
from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["core_feature"]


def core_feature(services: Services) -> Feature:
    return Feature(
        "core",
        commands=[
            Command("help", "list the commands", _help),
            Command("status", "model, conversation and session in use", _status),
        ],
    )


async def _help(ctx: CommandContext, args: str) -> str:
    return ctx.lore.commands.help_text()


async def _status(ctx: CommandContext, args: str) -> str:
    lore = ctx.lore
    session = ctx.session
    session.refresh()
    lines = [
        f"model:         {lore.config.model_spec()}",
        f"conversation:  {ctx.scope} (session {session.meta.session_id[:8]})",
        f"messages:      {len(session.messages)} ({session.meta.last_consolidated} consolidated)",
        f"speaking as:   {ctx.author} ({ctx.trust})",
        f"home:          {lore.config.home}",
    ]
    return "\n".join(lines)
