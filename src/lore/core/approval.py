"""Asking the owner before a tool acts: the action shown, the answer, who gives it.

A tool whose trust level is `ask` hands an `Action` (the exact diff of a write, the
command line of an exec) to the `Approver` its channel put on the `ToolContext`, and
waits. The terminal asks y/n; a web page would show a confirm button; a chat channel
would wait for the owner's reply. `ScriptedApprover` answers from a queue, for tests.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Action", "Approval", "Approver", "ScriptedApprover"]


@dataclass(frozen=True)
class Action:
    """What a tool is about to do, exactly as the owner should see it."""

    tool: str
    summary: str  # one line: "write TODO.md", "run `git status`"
    detail: str = ""  # the unified diff of a write, the full command line of an exec


@dataclass(frozen=True)
class Approval:
    approved: bool
    by: str  # who answered, e.g. "john (terminal)"


class Approver(Protocol):
    async def approve(self, action: Action) -> Approval: ...


class ScriptedApprover:
    """Answers queued by a test ("y", "n", or None for never answering); records actions."""

    def __init__(self, *answers: str | None, by: str = "tester") -> None:
        self._answers: deque[str | None] = deque(answers)
        self.by = by
        self.actions: list[Action] = []

    def answer(self, *answers: str | None) -> ScriptedApprover:
        self._answers.extend(answers)
        return self

    async def approve(self, action: Action) -> Approval:
        self.actions.append(action)
        answer = self._answers.popleft() if self._answers else "n"
        if answer is None:
            await asyncio.Event().wait()  # the owner never answers
        return Approval(approved=answer is not None and answer.lower() in ("y", "yes"), by=self.by)
