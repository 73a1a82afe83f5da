"""Approval in the terminal: show the exact action (a coloured diff, the command), ask y/n.

Only "y" or "yes" approves; Enter, anything else, Ctrl+C and Ctrl+D decline. The prompt
is prompt_toolkit's, so it can be cancelled: when the owner does not answer in time,
the wait ends and the action is refused (the trust policy owns that timeout).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from lore.core.approval import Action, Approval

__all__ = ["TerminalApprover"]

_MAX_LINES = 400


class TerminalApprover:
    def __init__(
        self, who: str, out: TextIO, *, color: bool, before: Callable[[], None] | None = None
    ) -> None:
        self.who = who
        self.out = out
        self.color = color
        self.before = before  # finishes a half-written reply line first

    def _style(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    async def approve(self, action: Action) -> Approval:
        if self.before is not None:
            self.before()
        self.out.write(self._style("1;33", f"? {action.tool} wants to {action.summary}") + "\n")
        lines = action.detail.splitlines()
        for line in lines[:_MAX_LINES]:
            self.out.write(self._line(line) + "\n")
        if len(lines) > _MAX_LINES:
            self.out.write(self._style("2", f"… {len(lines) - _MAX_LINES} more lines") + "\n")
        self.out.flush()
        answer = await self._ask("Allow? [y/N] ")
        approved = answer.strip().lower() in ("y", "yes")
        self.out.write(self._style("2", "· approved" if approved else "· declined") + "\n")
        self.out.flush()
        return Approval(approved, by=f"{self.who} (terminal)")

    def _line(self, line: str) -> str:
        if line.startswith(("+++", "---")):
            return self._style("1", line)
        if line.startswith("+"):
            return self._style("32", line)
        if line.startswith("-"):
            return self._style("31", line)
        if line.startswith("@@"):
            return self._style("36", line)
        return line

    async def _ask(self, question: str) -> str:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.output import create_output

        session: PromptSession[str] = PromptSession(output=create_output(stdout=self.out))
        try:
            return await session.prompt_async(question)
        except (EOFError, KeyboardInterrupt):
            return ""
