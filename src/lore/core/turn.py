"""One turn, top to bottom: persist what was said → build the context → run the tool loop
→ persist the reply → emit → schedule background work.

What was said is written (fsynced) before the model is asked, and every streamed chunk
goes to a draft as the channel shows it (a file at once; PostgreSQL within a quarter
second, from a thread), so what the user saw survives a crash: an interrupted reply comes
back as an assistant message marked `interrupted`.
Ctrl+C (cancellation) marks the user message cancelled, which leaves the conversation as
it was: cancelled turns never reach a window again. A failed turn keeps the user message
(marked unanswered) and the tool rounds that completed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lore.core.context import ContextBuilder
from lore.core.feature import CompletedTurn
from lore.core.loop import TurnResult, run_tool_loop
from lore.core.tools import ToolContext
from lore.core.window import history_window
from lore.errors import BadRequestError, DiskFullError, LoreError, ProviderResponseError
from lore.events import Emit, Event, Inbound, Notice, ReplyFailed, TextDelta
from lore.llm.base import Message
from lore.metrics import METRICS

if TYPE_CHECKING:
    from lore.core.approval import Approver
    from lore.core.feature import Assembled
    from lore.ports.sessions import LiveSession

__all__ = ["TurnRunner", "tool_context"]

log = logging.getLogger(__name__)


def tool_context(
    services: Assembled,
    session: LiveSession,
    inbound: Inbound,
    approver: Approver | None = None,
) -> ToolContext:
    return ToolContext(
        scope=inbound.scope,
        author=inbound.author,
        session_id=session.meta.session_id,
        message_index=len(session.messages),
        now=services.clock.now(),
        timezone=getattr(services.zone, "key", "UTC"),
        channel=inbound.channel,
        trust=inbound.trust,
        owner=inbound.trust == "owner" and services.config.is_owner_scope(inbound.scope),
        project=inbound.project,
        approver=approver,
    )


class TurnRunner:
    """Runs turns against the services; the bus calls it one turn per scope at a time."""

    def __init__(self, services: Assembled) -> None:
        self.services = services
        self.context = ContextBuilder(services)
        # Set on a clean shutdown (SIGTERM): a turn cut short keeps what was shown.
        self.stopping = False

    def system_prompt(self, ctx: ToolContext) -> str:
        return self.context.build(ctx, tools_enabled=self.services.provider.supports_tools)

    def record(self, inbound: Inbound) -> None:
        """Keep a message in its conversation without a turn."""
        session = self.services.session(inbound.scope)
        session.append([_user_message(inbound, self.services.clock.now())])

    async def run(
        self, inbound: Inbound, emit: Emit, approver: Approver | None = None
    ) -> TurnResult | None:
        """Run one turn. Cancelling it persists a cancel mark and emits a failure.
        `approver` answers for the owner when a tool asks first (None: no one can)."""
        started, outcome = time.monotonic(), "failed"
        try:
            result = await self._run(inbound, emit, approver)
            outcome = "ok" if result is not None else "failed"
            return result
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            METRICS.count("lore_turns", channel=inbound.channel, outcome=outcome)
            METRICS.observe("lore_turn_seconds", time.monotonic() - started)

    async def _run(
        self, inbound: Inbound, emit: Emit, approver: Approver | None
    ) -> TurnResult | None:
        lore = self.services
        session = lore.session(inbound.scope)
        session.refresh()
        project = str(inbound.project) if inbound.project is not None else None
        recorded = session.meta.extra.get("project")
        if recorded != project and (project is not None or recorded is not None):
            session.update_meta(extra={"project": project})  # None: back in the workspace
        ctx = tool_context(lore, session, inbound, approver)
        now_iso = ctx.now.astimezone(UTC).isoformat(timespec="seconds")
        user = _user_message(inbound, ctx.now)
        history = list(session.messages)
        start = session.meta.last_consolidated
        index = ctx.message_index
        try:
            # Written before the model is asked (a killed process keeps it); the turn's
            # last append carries it to the disk with the reply.
            await lore.off_loop(session.append, [user], touch=False, durable=False)
        except asyncio.CancelledError:
            session.mark(index, cancelled=True)  # written by now: off_loop waits for it
            emit(ReplyFailed("Cancelled.", cancelled=True))
            raise
        late: asyncio.CancelledError | None = None  # a cancellation as the reply was stored
        rounds: list[Message] = []  # finished tool rounds, kept even if the turn fails
        sent: list[Message] = []  # the history the request carried
        system = ""
        fixed, exact = 0, True
        with session.draft(index, why=ctx.provenance.to_dict) as draft:

            def show(event: Event) -> None:
                if isinstance(event, TextDelta):
                    draft.write(event.text)  # before the channel shows it
                emit(event)

            try:
                provider = lore.provider
                if provider.supports_tools:
                    await lore.tools.prepare(ctx)  # an MCP server starts on first need
                system = self.system_prompt(ctx)
                fixed, exact = self._fixed_tokens(system, user, ctx, history[start:])
                count = lore.tokens.count_messages if exact else lore.tokens.most_messages
                window = history_window(
                    history,
                    start=start,
                    budget=lore.history_budget(fixed),
                    count=lambda message: count([message]),
                )
                sent = window.messages
                result = await run_tool_loop(
                    provider,
                    system=system,
                    history=[*sent, user],
                    tools=lore.tools,
                    ctx=ctx,
                    emit=show,
                    max_rounds=inbound.max_tool_rounds or lore.config.max_tool_rounds,
                    max_tokens=lore.reply_tokens,
                    now_iso=now_iso,
                    on_round=rounds.extend,
                )
                if not result.text.strip():
                    # Nothing to show (tool rounds used up, or an empty answer): a failed
                    # turn, never an empty reply stored as if the model had answered.
                    after = f" after {result.rounds} tool rounds" if result.rounds else ""
                    raise ProviderResponseError(
                        f"{provider.name} gave no reply{after}; try again or rephrase"
                    )
                _keep_why(result.messages, ctx)
                try:  # a full disk refuses it, like any failure
                    await lore.off_loop(session.append, result.messages)
                except asyncio.CancelledError as exc:
                    late = exc  # stored all the same: the turn ends, then the cancellation
            except asyncio.CancelledError:
                if self.stopping and draft.text:
                    cut = [_interrupted(draft.text, now_iso)]
                    _keep_why(cut, ctx)
                    session.append([*rounds, *cut])
                else:
                    session.mark(index, cancelled=True)
                emit(ReplyFailed("Cancelled.", cancelled=True))
                raise
            except LoreError as exc:
                # Keep what the tools already did (a reminder set, a memory noted), so a
                # retry does not repeat it, and any text that was shown.
                tail = [_interrupted(draft.text, now_iso)] if draft.text else []
                _keep_why(tail, ctx)
                try:
                    session.append([*rounds, *tail])
                except DiskFullError:
                    pass  # the mark is one short line: it may still fit, and matters more
                session.mark(index, unanswered=True)
                if isinstance(exc, BadRequestError) and system:
                    self._learn_from_refusal(sent, user, system, ctx)
                for notice in ctx.notices:
                    emit(Notice(notice))
                emit(ReplyFailed(str(exc)))
                return None
        if result.first_prompt_tokens and exact:
            # The provider's count includes the tool schemas; so must the estimate.
            estimated = lore.tokens.count_messages([*sent, user], system)
            estimated += self.tool_schema_tokens(ctx)
            lore.tokens.calibrate(estimated, result.first_prompt_tokens)
        for notice in ctx.notices:
            emit(Notice(notice))
        completed = CompletedTurn(
            scope=inbound.scope,
            author=inbound.author,
            channel=inbound.channel,
            session_id=session.meta.session_id,
            user_index=index,
            user_text=inbound.text,
            reply_text=result.text,
            messages=[user, *result.messages],
            fixed_tokens=fixed,
            count_fixed=None if exact else lambda: self._exact_fixed_tokens(system, user, ctx),
        )
        self._after_turn(completed, emit)
        if late is not None:
            raise late
        return result

    def _after_turn(self, completed: CompletedTurn, emit: Emit) -> None:
        lore = self.services

        def failed(exc: BaseException) -> None:
            emit(Notice(f"background work failed: {exc}", "warning"))

        for feature in lore.features:
            for hook in feature.after_turn:
                lore.background.spawn(
                    lambda hook=hook: hook(completed, emit),  # type: ignore[misc]
                    name=f"after-turn:{getattr(hook, '__name__', 'hook')}",
                    key=f"{hook!r}:{completed.scope}",
                    on_error=failed,
                )

    def _learn_from_refusal(
        self, history: list[Message], user: Message, system: str, ctx: ToolContext
    ) -> None:
        """A refused request that we thought filled most of the window was, in truth,
        over it: our estimate runs low for this model. Counting higher from now on shrinks
        the next window and brings consolidation forward, so the session cannot wedge."""
        lore = self.services
        estimated = lore.tokens.count_messages([*history, user], system)
        estimated += self.tool_schema_tokens(ctx)
        if estimated + lore.reply_tokens > lore.context_window // 2:
            lore.tokens.at_least(estimated, lore.context_window - lore.reply_tokens + 1)

    def tool_schema_tokens(self, ctx: ToolContext) -> int:
        """Tokens of the tool schemas this turn's request carries (only the tools offered
        to this speaker: a member's request has no owner-only tools)."""
        return self.services.tokens.count(self._schemas(ctx))

    def _schemas(self, ctx: ToolContext) -> str:
        lore = self.services
        if not lore.provider.supports_tools:
            return ""
        return json.dumps([vars(spec) for spec in lore.tools.specs(ctx)], ensure_ascii=False)

    def _fixed_tokens(
        self, system: str, user: Message, ctx: ToolContext, history: list[Message]
    ) -> tuple[int, bool]:
        """Tokens of the system prompt, the tool schemas and the user message, and whether
        that count is exact. Until its tokenizer is needed, an upper bound does: while the
        whole history fits the window by the bound, nothing is cut, and a one-shot turn
        never loads the tokenizer."""
        tokens = self.services.tokens
        if not tokens.loaded:
            most = tokens.most_messages([user], system) + tokens.most(self._schemas(ctx))
            if tokens.most_messages(history) <= self.services.history_budget(most):
                return most, False
        return self._exact_fixed_tokens(system, user, ctx), True

    def _exact_fixed_tokens(self, system: str, user: Message, ctx: ToolContext) -> int:
        return self.services.tokens.count_messages([user], system) + self.tool_schema_tokens(ctx)


def _user_message(inbound: Inbound, now: datetime) -> Message:
    message: Message = {
        "role": "user",
        "content": inbound.text,
        "author": inbound.author,
        "timestamp": now.astimezone(UTC).isoformat(timespec="seconds"),
    }
    if inbound.channel != "cli":
        message["channel"] = inbound.channel
    if inbound.author_id:
        message["author_id"] = inbound.author_id
    if inbound.message_id:  # a chat channel's id: a message handled again is recognised
        message["message_id"] = inbound.message_id
    return message


def _keep_why(added: list[Message], ctx: ToolContext) -> None:
    """The reply carries what the turn showed the model (`why`); tool rounds need none."""
    if added and added[-1]["role"] == "assistant" and ctx.provenance:
        added[-1]["why"] = ctx.provenance.to_dict()


def _interrupted(text: str, now_iso: str) -> Message:
    return {"role": "assistant", "content": text, "timestamp": now_iso, "interrupted": True}
