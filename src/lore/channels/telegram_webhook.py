"""Telegram's webhook on the gateway: `POST /telegram/webhook`, instead of long polling.

Telegram posts each update to the public address the channel gave setWebhook, with the
secret given there in the `X-Telegram-Bot-Api-Secret-Token` header. A request without
the header gets 401 and one with another secret 403; neither body is read. Before the
channel has started (it learns the bot's name first) the answer is 503, which Telegram
retries. An accepted
update takes the polled updates' way (`TelegramChannel.accept`, which records it in the
chat ledger and drops an update id it has taken before, as Telegram redelivers what it
thinks was lost) and is answered once recorded: the reply goes out through sendMessage
when the turn is done.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from typing import TYPE_CHECKING, Protocol

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lore.channels.http.auth import Forbidden, Unauthorized
from lore.channels.http.context import error_response
from lore.errors import InvalidInputError, StoreError

if TYPE_CHECKING:
    from telegram import Bot, Update

    from lore.config import TelegramConfig


class TelegramUpdates(Protocol):
    """What the route needs of the channel (`lore.channels.telegram.TelegramChannel`)."""

    settings: TelegramConfig
    ready: asyncio.Event

    @property
    def bot(self) -> Bot: ...

    async def accept(self, update: Update) -> bool: ...


__all__ = ["SECRET_HEADER", "WEBHOOK_PATH", "TelegramUpdates", "telegram_router"]

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def telegram_router(channel: TelegramUpdates) -> APIRouter:
    """The webhook route for `channel`."""
    from telegram import Update

    secret = channel.settings.webhook_secret.encode()
    router = APIRouter(include_in_schema=False)

    @router.post(WEBHOOK_PATH)
    async def telegram_webhook(request: Request) -> JSONResponse:
        given = request.headers.get(SECRET_HEADER)
        if given is None:
            raise Unauthorized(f"a Telegram update needs the {SECRET_HEADER} header")
        if not hmac.compare_digest(given.encode(), secret):
            raise Forbidden("the Telegram secret token does not match")
        if not channel.ready.is_set():
            # Not knowing the bot's name yet, a mention would go unseen: Telegram retries.
            return error_response(503, "Lore's Telegram channel is still starting")
        try:
            data = json.loads(await request.body())
            update = Update.de_json(data, channel.bot) if isinstance(data, dict) else None
        except (ValueError, KeyError, TypeError):
            update = None
        if update is None:
            raise InvalidInputError("the request body is not a Telegram update")
        try:
            await channel.accept(update)
        except StoreError as exc:  # not recorded: Telegram must post it again
            return error_response(503, f"the update could not be recorded: {exc}")
        return JSONResponse({"ok": True})

    return router
