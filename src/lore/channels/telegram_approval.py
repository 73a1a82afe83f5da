"""Approval in a Telegram chat: the action goes to the chat, the owner's next message there
is the answer ("y" or "yes" allows; anything else refuses).

While an approval waits, the owner's message in that chat is taken as the answer and never
reaches the conversation; what others write in a group goes on as usual. No answer within
the trust policy's timeout is a no, and the wait is forgotten.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from lore.core.approval import Action, Approval

__all__ = ["TelegramApprovals"]

_MAX_DETAIL = 3000  # the diff or command shown; the chat is no place for a long patch


class TelegramApprovals:
    """The open questions of one Telegram channel, one per chat at most."""

    def __init__(self, send: Callable[[int, str], Awaitable[None]]) -> None:
        self._send = send
        self._waiting: dict[int, asyncio.Future[str]] = {}

    def for_chat(self, chat_id: int, owner_name: str) -> ChatApprover:
        return ChatApprover(self, chat_id, owner_name)

    def answer(self, chat_id: int, text: str) -> bool:
        """The owner wrote `text` in this chat: True when it answered a waiting question."""
        future = self._waiting.get(chat_id)
        if future is None or future.done():
            return False
        future.set_result(text)
        return True

    async def ask(self, chat_id: int, action: Action) -> str:
        detail = action.detail
        if len(detail) > _MAX_DETAIL:
            detail = (
                detail[:_MAX_DETAIL] + f"\n… {len(action.detail) - _MAX_DETAIL} more characters"
            )
        question = f"May I {action.summary}?\n\n{detail}".rstrip()
        # Waiting before asking: the answer may come back before the send returns.
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[chat_id] = future
        try:
            await self._send(chat_id, f"{question}\n\nReply y to allow; anything else refuses.")
            return await future
        finally:
            if self._waiting.get(chat_id) is future:
                del self._waiting[chat_id]


class ChatApprover:
    def __init__(self, approvals: TelegramApprovals, chat_id: int, owner_name: str) -> None:
        self.approvals = approvals
        self.chat_id = chat_id
        self.owner_name = owner_name

    async def approve(self, action: Action) -> Approval:
        answer = await self.approvals.ask(self.chat_id, action)
        approved = answer.strip().lower() in ("y", "yes")
        return Approval(approved, by=f"{self.owner_name} (telegram)")
