"""One conversation as a channel sees it: send text in, get events out.

A turn: load the live session → build the context → run the tool loop → persist →
emit → schedule background work. The conversation never knows which channel it serves.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING

from lore.core.commands import is_command
from lore.core.context import ContextBuilder
from lore.core.loop import TurnResult, run_tool_loop
from lore.core.tools import ToolContext
from lore.core.window import history_window
from lore.errors import BadRequestError, LoreError
from lore.events import Emit, Notice, ReplyFailed
from lore.llm.base import Message

if TYPE_CHECKING:
    from pathlib import Path

    from lore.app import Lore
    from lore.backends.local.live import LiveSession
    from lore.core.approval import Approver

__all__ = ["AfterTurn", "CompletedTurn", "Conversation"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompletedTurn:
    """What background work after a turn gets to see."""

    scope: str
    author: str
    session_id: str
    user_index: int  # index of the user message in the live session
    user_text: str
    reply_text: str
    messages: list[Message]  # user message + everything the turn added


AfterTurn = Callable[["Conversation", CompletedTurn], Awaitable[None]]


class Conversation:
    def __init__(
        self,
        lore: Lore,
        key: str,
        *,
        emit: Emit,
        author: str,
        channel: str,
        approver: Approver | None = None,
        project: Path | None = None,
    ) -> None:
        self.lore = lore
        self.scope = key
        self.emit = emit
        self.author = author
        self.channel = channel
        self.approver = approver  # set by the channel: who answers a tool's "may I?"
        self.project = project  # the chosen project folder, if any
        self._session: LiveSession | None = None
        self.context = ContextBuilder(lore)

    @property
    def session(self) -> LiveSession:
        if self._session is None:
            self._session = self.lore.session(self.scope)
        return self._session

    async def send(self, text: str) -> TurnResult | str | None:
        """A slash command (returns its output) or a turn (returns its result)."""
        if is_command(text):
            return await self.command(text)
        return await self.turn(text)

    async def command(self, text: str) -> str:
        name, *args = text.strip()[1:].split(maxsplit=1)
        command = self.lore.commands.get(name)
        if command is None:
            raise UnknownCommand(self.lore.commands.unknown_message(name))
        return await command.handler(self, args[0] if args else "") or ""

    def tool_context(self) -> ToolContext:
        session = self.session
        return ToolContext(
            scope=self.scope,
            author=self.author,
            session_id=session.meta.session_id,
            message_index=len(session.messages),
            now=self.lore.clock.now(),
            timezone=getattr(self.lore.zone, "key", "UTC"),
            channel=self.channel,
            owner=self.lore.config.is_owner_scope(self.scope),
            project=self.project,
            approver=self.approver,
        )

    def system_prompt(self, ctx: ToolContext | None = None) -> str:
        """The system prompt the next turn would send (the start-up benchmark times it)."""
        return self.context.build(
            ctx or self.tool_context(), tools_enabled=self.lore.provider.supports_tools
        )

    async def turn(self, text: str) -> TurnResult | None:
        """Run one turn. Cancelling it (task.cancel) persists nothing and emits a failure."""
        lore = self.lore
        session = self.session
        session.refresh()
        if self.project is not None and session.meta.extra.get("project") != str(self.project):
            session.update_meta(extra={"project": str(self.project)})
        ctx = self.tool_context()
        now_iso = ctx.now.astimezone(UTC).isoformat(timespec="seconds")
        user: Message = {
            "role": "user",
            "content": text,
            "author": self.author,
            "timestamp": now_iso,
        }
        rounds: list[Message] = []  # finished tool rounds, kept even if the turn fails
        sent: list[Message] = []  # the history the request carried
        system = ""
        try:
            provider = lore.provider
            system = self.context.build(ctx, tools_enabled=provider.supports_tools)
            budget = self._history_budget(system, user)
            window = history_window(
                session.messages,
                start=session.meta.last_consolidated,
                budget=budget,
                count=lambda message: lore.tokens.count_messages([message]),
            )
            sent = window.messages
            result = await run_tool_loop(
                provider,
                system=system,
                history=[*sent, user],
                tools=lore.tools,
                ctx=ctx,
                emit=self.emit,
                max_rounds=lore.config.max_tool_rounds,
                max_tokens=lore.reply_tokens,
                now_iso=now_iso,
                on_round=rounds.extend,
            )
        except asyncio.CancelledError:
            self.emit(ReplyFailed("Cancelled.", cancelled=True))
            raise
        except LoreError as exc:
            # Keep what the user said, even though no reply came, and what the tools
            # already did (a reminder set, a memory noted), so a retry does not repeat it.
            session.append([{**user, "unanswered": True}, *rounds])
            if isinstance(exc, BadRequestError) and system:
                self._learn_from_refusal(sent, user, system)
            for notice in ctx.notices:
                self.emit(Notice(notice))
            self.emit(ReplyFailed(str(exc)))
            return None
        session.append([user, *result.messages])
        if result.first_prompt_tokens:
            # The provider's count includes the tool schemas; so must the estimate.
            estimated = lore.tokens.count_messages([*sent, user], system)
            estimated += self._tool_schema_tokens()
            lore.tokens.calibrate(estimated, result.first_prompt_tokens)
        for notice in ctx.notices:
            self.emit(Notice(notice))
        completed = CompletedTurn(
            scope=self.scope,
            author=self.author,
            session_id=session.meta.session_id,
            user_index=ctx.message_index,
            user_text=text,
            reply_text=result.text,
            messages=[user, *result.messages],
        )
        for hook in lore.after_turn:
            lore.background.spawn(
                lambda hook=hook: hook(self, completed),  # type: ignore[misc]
                name=f"after-turn:{getattr(hook, '__name__', 'hook')}",
                key=f"{hook!r}:{self.scope}",
                on_error=lambda exc: self.emit(Notice(f"background work failed: {exc}", "warning")),
            )
        return result

    def _learn_from_refusal(self, history: list[Message], user: Message, system: str) -> None:
        """A refused request that we thought filled most of the window was, in truth,
        over it: our estimate runs low for this model. Counting higher from now on shrinks
        the next window and brings consolidation forward, so the session cannot wedge."""
        lore = self.lore
        estimated = lore.tokens.count_messages([*history, user], system)
        estimated += self._tool_schema_tokens()
        if estimated + lore.reply_tokens > lore.context_window // 2:
            lore.tokens.calibrate(estimated, lore.context_window - lore.reply_tokens + 1)

    def _tool_schema_tokens(self) -> int:
        if not self.lore.provider.supports_tools:
            return 0
        specs = [vars(spec) for spec in self.lore.tools.specs(self.tool_context())]
        return self.lore.tokens.count(json.dumps(specs, ensure_ascii=False))

    def _history_budget(self, system: str, user: Message) -> int:
        used = self.lore.tokens.count_messages([user], system) + self._tool_schema_tokens()
        return self.lore.history_budget(used)


class UnknownCommand(LoreError):
    """A slash command that does not exist; never sent to the model."""
