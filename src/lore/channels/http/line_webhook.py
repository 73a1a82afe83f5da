"""`POST /line/webhook`: where LINE delivers a Messaging API channel's events.

The signature is the only credential LINE sends (no bearer token): a missing or wrong
X-Line-Signature gets 400 and nothing is processed or stored. A good call is answered at
once; the messages it carried are answered (reply or push) as their turns finish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request

if TYPE_CHECKING:
    from lore.channels.line import LineChannel

__all__ = ["line_router"]


def line_router(channel: LineChannel) -> APIRouter:
    router = APIRouter(tags=["line"])

    @router.post("/line/webhook", summary="LINE Messaging API webhook (signed by LINE)")
    async def webhook(request: Request) -> dict[str, Any]:
        body = await request.body()
        events = channel.parse(body, request.headers.get("x-line-signature", ""))
        await channel.handle(events)
        return {}

    return router
