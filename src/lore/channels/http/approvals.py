"""Approval over HTTP: the web page's Approve / Deny buttons for a tool that asks first.

A reply streamed to a client that opted in (the page sends `X-Lore-Approvals: stream`)
gets a `WebApprover`. When a tool asks, the approver puts the question on the desk under
a fresh unguessable id and tells the stream (`{"object": "lore.approval", ...}`, the
exact diff or command line, the seconds left); the turn waits. The answer comes as
`POST /ui/approvals/{id}` with `decision=approve` or `deny`, from the owner only (the
page's login cookie, SameSite=Strict, or the owner's bearer token). No answer within
`[tools] approval_timeout` is a no: the trust policy stops the wait, the question leaves
the desk, and the stream says how each question ended (`lore.approval.settled`). A page
opened again while a question waits finds it at `GET /ui/approvals?scope=`. Any other
API client gets no approver, so an `ask` is refused with an error the model reads.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from lore.core.approval import Action, Approval
from lore.errors import NotFoundError

__all__ = [
    "OPT_IN",
    "ApprovalAsked",
    "ApprovalSettled",
    "Desk",
    "Notice",
    "WebApprover",
]

OPT_IN = "stream"  # the value of X-Lore-Approvals that asks for approvals in the stream

Outcome = Literal["approved", "declined", "expired"]


@dataclass
class _Question:
    id: str
    scope: str
    action: Action
    seconds: float  # how long it waits in all
    answer: asyncio.Future[Approval] = field(repr=False)
    deadline: float = 0.0  # on the event loop's clock

    def asked(self) -> ApprovalAsked:
        """The question as the stream shows it, with the seconds it has left."""
        left = max(0.0, self.deadline - asyncio.get_running_loop().time())
        return ApprovalAsked(self.id, self.scope, self.action, round(left, 1))


@dataclass(frozen=True)
class ApprovalAsked:
    """A tool waits for the owner: what the stream shows as the question."""

    id: str
    scope: str
    action: Action
    seconds: float

    def record(self) -> dict[str, Any]:
        return {
            "object": "lore.approval",
            "id": self.id,
            "scope": self.scope,
            "tool": self.action.tool,
            "summary": self.action.summary,
            "detail": self.action.detail,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class ApprovalSettled:
    id: str
    outcome: Outcome
    by: str = ""

    def record(self) -> dict[str, Any]:
        found = {"object": "lore.approval.settled", "id": self.id, "outcome": self.outcome}
        return found | ({"by": self.by} if self.by else {})


Notice = ApprovalAsked | ApprovalSettled


class Desk:
    """The questions waiting for the owner, by id, across every scope of one gateway."""

    def __init__(self) -> None:
        self._waiting: dict[str, _Question] = {}

    def open(self, scope: str, action: Action, seconds: float) -> _Question:
        loop = asyncio.get_running_loop()
        question = _Question(
            secrets.token_urlsafe(16), scope, action, seconds, loop.create_future()
        )
        question.deadline = loop.time() + seconds
        self._waiting[question.id] = question
        return question

    def close(self, question_id: str) -> None:
        self._waiting.pop(question_id, None)

    def waiting(self, scope: str | None = None) -> list[_Question]:
        """The open questions, oldest first (of one scope, when given)."""
        return [q for q in self._waiting.values() if scope is None or q.scope == scope]

    def refuse_all(self, why: str) -> None:
        """Answer no to every waiting question (the gateway is stopping)."""
        for question in self.waiting():
            if not question.answer.done():
                question.answer.set_result(Approval(False, by=why))

    def answer(self, question_id: str, approval: Approval) -> None:
        question = self._waiting.get(question_id)
        if question is None or question.answer.done():
            raise NotFoundError(
                "that approval is no longer waiting (it was answered or ran out of time)"
            )
        question.answer.set_result(approval)


class WebApprover:
    """Asks through the desk and the reply's stream; the turn waits for the answer."""

    def __init__(
        self, desk: Desk, scope: str, show: Callable[[Notice], None], *, seconds: float
    ) -> None:
        self.desk = desk
        self.scope = scope
        self.show = show
        self.seconds = seconds

    async def approve(self, action: Action) -> Approval:
        question = self.desk.open(self.scope, action, self.seconds)
        self.show(ApprovalAsked(question.id, self.scope, action, self.seconds))
        settled = ApprovalSettled(question.id, "expired")
        try:
            approval = await question.answer
            outcome: Outcome = "approved" if approval.approved else "declined"
            settled = ApprovalSettled(question.id, outcome, approval.by)
            return approval
        finally:  # answered, or the wait was stopped (no answer in time, shutdown)
            self.desk.close(question.id)
            self.show(settled)
