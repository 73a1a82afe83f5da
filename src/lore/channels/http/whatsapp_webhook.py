"""`/whatsapp/webhook`: where Meta delivers a WhatsApp Business number's messages and
delivery statuses.

`GET` is Meta's subscription check: the `hub.challenge` comes back when `hub.verify_token`
is `whatsapp.verify_token`, else 403. `POST` carries the notification, signed: a missing
or wrong `X-Hub-Signature-256` gets 401 and nothing is read or stored. A good call is
answered once its messages are recorded in the chat ledger (a failure to record them is
a 503, which Meta retries); the answers go out through the Graph API as turns finish.
"""

from __future__ import annotations

from typing import Protocol

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from lore.channels.http.auth import Forbidden, Unauthorized
from lore.channels.http.context import error_response
from lore.channels.whatsapp_api import MAX_BODY, WEBHOOK_PATH
from lore.errors import InvalidInputError, StoreError


class WhatsAppNotifications(Protocol):
    """What the routes need of the channel (`lore.channels.whatsapp.WhatsAppChannel`)."""

    def verify(self, mode: str, token: str, challenge: str) -> str: ...

    def signed(self, body: bytes, signature: str) -> bool: ...

    def handle(self, body: bytes) -> None: ...


__all__ = ["SIGNATURE_HEADER", "WhatsAppNotifications", "whatsapp_router"]

SIGNATURE_HEADER = "X-Hub-Signature-256"


def whatsapp_router(channel: WhatsAppNotifications) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(WEBHOOK_PATH)
    async def subscribe(
        mode: str = Query("", alias="hub.mode"),
        token: str = Query("", alias="hub.verify_token"),
        challenge: str = Query("", alias="hub.challenge"),
    ) -> PlainTextResponse:
        try:
            return PlainTextResponse(channel.verify(mode, token, challenge))
        except InvalidInputError as exc:
            raise Forbidden(str(exc)) from None

    @router.post(WEBHOOK_PATH)
    async def notify(request: Request) -> JSONResponse:
        signature = request.headers.get(SIGNATURE_HEADER)
        if not signature:
            raise Unauthorized(f"a WhatsApp notification needs the {SIGNATURE_HEADER} header")
        length = request.headers.get("content-length", "")
        if length.isdecimal() and int(length) > MAX_BODY:  # refused before it is read
            raise InvalidInputError(f"the webhook body is over {MAX_BODY} bytes")
        body = await request.body()
        if not channel.signed(body, signature):
            raise Unauthorized(f"the {SIGNATURE_HEADER} does not match the body")
        try:
            channel.handle(body)
        except StoreError as exc:  # not recorded: Meta must send the call again
            return error_response(503, f"the notification could not be recorded: {exc}")
        return JSONResponse({})

    return router
