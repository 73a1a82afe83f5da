"""Approval in a chat: the action goes to the chat, the owner's next message there is the
answer ("y" or "yes" allows; anything else refuses).

While an approval waits, the owner's message in that chat is taken as the answer and never
reaches the conversation. No answer within the trust policy's timeout is a no, and the
wait is forgotten. A chat channel keys the open questions by its own chat id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from lore.core.approval import Action, Approval

__all__ = ["ChatApprovals", "ChatApprover"]

_MAX_DETAIL = 3000  # the diff or command shown; a chat is no place for a long patch

K = TypeVar("K", bound=Hashable)


class ChatApprovals(Generic[K]):
    """The open questions of one chat channel, one per chat at most."""

    def __init__(self, send: Callable[[K, str], Awaitable[None]], channel: str) -> None:
        self._send = send
        self.channel = channel
        self._waiting: dict[K, asyncio.Future[str]] = {}

    def for_chat(self, chat: K, owner_name: str) -> ChatApprover[K]:
        return ChatApprover(self, chat, owner_name)

    def answer(self, chat: K, text: str) -> bool:
        """The owner wrote `text` in this chat: True when it answered a waiting question."""
        future = self._waiting.get(chat)
        if future is None or future.done():
            return False
        future.set_result(text)
        return True

    async def ask(self, chat: K, action: Action) -> str:
        detail = action.detail
        if len(detail) > _MAX_DETAIL:
            more = len(action.detail) - _MAX_DETAIL
            detail = f"{detail[:_MAX_DETAIL]}\n… {more} more characters"
        question = f"May I {action.summary}?\n\n{detail}".rstrip()
        # Waiting before asking: the answer may come back before the send returns.
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[chat] = future
        try:
            await self._send(chat, f"{question}\n\nReply y to allow; anything else refuses.")
            return await future
        finally:
            if self._waiting.get(chat) is future:
                del self._waiting[chat]


class ChatApprover(Generic[K]):
    def __init__(self, approvals: ChatApprovals[K], chat: K, owner_name: str) -> None:
        self.approvals = approvals
        self.chat = chat
        self.owner_name = owner_name

    async def approve(self, action: Action) -> Approval:
        answer = await self.approvals.ask(self.chat, action)
        approved = answer.strip().lower() in ("y", "yes")
        return Approval(approved, by=f"{self.owner_name} ({self.approvals.channel})")
