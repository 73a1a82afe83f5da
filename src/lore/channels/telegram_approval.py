"""Approval in a Telegram chat: the action goes to the chat, the owner's next message there
is the answer ("y" or "yes" allows; anything else refuses). The mechanism is the one every
chat channel shares (`chat_approval.py`), keyed by Telegram's chat id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from lore.channels.chat_approval import ChatApprovals, ChatApprover

__all__ = ["ChatApprover", "TelegramApprovals"]


class TelegramApprovals(ChatApprovals[int]):
    """The open questions of one Telegram channel, one per chat at most."""

    def __init__(self, send: Callable[[int, str], Awaitable[None]]) -> None:
        super().__init__(send, "telegram")
