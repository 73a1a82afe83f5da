"""The one place the HTTP channel hands a message to Lore and gets events back.

Turns in one scope run one at a time, in arrival order (two clients writing into one
conversation at once must not build their windows from the same history); different
scopes run concurrently. A slash command's output comes back as the reply's text.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lore.agent.events import Emit, ReplyFailed, ReplyFinished
from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.app import Lore

__all__ = ["Turns"]

log = logging.getLogger(__name__)


class Turns:
    def __init__(self, lore: Lore) -> None:
        self._lore = lore
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}

    async def send(self, scope: str, author: str, text: str, emit: Emit) -> None:
        """Run `text` as a turn (or a slash command) in `scope`; every outcome is an event."""
        lock = self._locks.setdefault(scope, asyncio.Lock())
        self._waiting[scope] = self._waiting.get(scope, 0) + 1
        try:
            async with lock:
                await self._run(scope, author, text, emit)
        finally:
            self._waiting[scope] -= 1
            if not self._waiting[scope]:
                del self._waiting[scope], self._locks[scope]

    async def _run(self, scope: str, author: str, text: str, emit: Emit) -> None:
        conversation = self._lore.conversation(scope, emit=emit, author=author, channel="api")
        try:
            result = await conversation.send(text)
        except LoreError as exc:
            emit(ReplyFailed(str(exc)))
            return
        except Exception as exc:  # a bug must not take the server down, nor leak a trace
            if type(exc).__name__ == "ExitChat":
                emit(ReplyFailed("/exit only ends a terminal chat"))
                return
            log.exception("turn in %s failed", scope)
            emit(ReplyFailed("Lore failed to answer; the server log has the details"))
            return
        if isinstance(result, str):
            emit(ReplyFinished(result))
