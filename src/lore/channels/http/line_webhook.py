"""`POST /line/webhook`: where LINE delivers a Messaging API channel's events.

The signature is the only credential LINE sends (no bearer token): a missing or wrong
X-Line-Signature gets 400 and nothing is processed or stored. A good call is answered as
soon as its events are recorded in the chat ledger (a failure to record them is an error
LINE retries); the messages it carried are answered (reply or push) as their turns finish,
and those a crash cut short by the next `lore serve`.
"""

from __future__ import annotations

from typing import Any, Protocol

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lore.channels.http.context import error_response
from lore.channels.line_api import MAX_BODY
from lore.errors import InvalidInputError, StoreError


class LineEvents(Protocol):
    """What the route needs of the LINE channel (`lore.channels.line.LineChannel`)."""

    def parse(self, body: bytes, signature: str) -> list[dict[str, Any]]: ...

    async def handle(self, events: list[dict[str, Any]]) -> None: ...


__all__ = ["LineEvents", "line_router"]


def line_router(channel: LineEvents) -> APIRouter:
    router = APIRouter(tags=["line"])

    @router.post("/line/webhook", summary="LINE Messaging API webhook (signed by LINE)")
    async def webhook(request: Request) -> JSONResponse:
        length = request.headers.get("content-length", "")
        if length.isdecimal() and int(length) > MAX_BODY:  # refused before it is read
            raise InvalidInputError(f"the webhook body is over {MAX_BODY} bytes")
        body = await request.body()
        events = channel.parse(body, request.headers.get("x-line-signature", ""))
        try:
            await channel.handle(events)
        except StoreError as exc:  # not recorded: LINE must send the call again
            return error_response(503, f"the events could not be recorded: {exc}")
        return JSONResponse({})

    return router
