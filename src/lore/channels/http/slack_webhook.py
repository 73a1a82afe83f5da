"""`POST /slack/events`: where Slack's Events API and interactivity (button presses) reach
the gateway, when the Slack app is not in Socket Mode.

Every call is signed with the app's signing secret: `X-Slack-Signature` is checked over
the raw body and `X-Slack-Request-Timestamp` must be within five minutes, before anything
is read; a missing, wrong or stale signature gets 401 and nothing is stored. The URL
check (`url_verification`) is answered with its challenge. An event is answered 200 once
it is recorded in the chat ledger (503 when it cannot be, which Slack retries); a retry
(`X-Slack-Retry-Num`) of one already taken is dropped by its key and answered 200.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from lore.channels.http.auth import Unauthorized
from lore.channels.http.context import error_response
from lore.channels.slack_events import MAX_BODY, check_signature
from lore.errors import InvalidInputError, StoreError

if TYPE_CHECKING:
    import asyncio

    from lore.config import SlackConfig

__all__ = ["EVENTS_PATH", "slack_router"]

EVENTS_PATH = "/slack/events"


class EventsChannel(Protocol):
    """What the route needs of the Slack channel (lore.channels.slack.SlackChannel)."""

    settings: SlackConfig
    ready: asyncio.Event

    def press(self, payload: dict[str, Any]) -> None: ...

    def accept(self, envelope: dict[str, Any]) -> bool: ...


def slack_router(channel: EventsChannel) -> APIRouter:
    """The Events API route for `channel`, for the gateway."""
    secret = channel.settings.signing_secret
    router = APIRouter(include_in_schema=False)

    @router.post(EVENTS_PATH)
    async def slack_events(request: Request) -> Response:
        length = request.headers.get("content-length", "")
        if length.isdecimal() and int(length) > MAX_BODY:  # refused before it is read
            raise InvalidInputError(f"the request body is over {MAX_BODY} bytes")
        body = await request.body()
        try:
            check_signature(
                secret,
                body,
                request.headers.get("x-slack-request-timestamp", ""),
                request.headers.get("x-slack-signature", ""),
                time.time(),
            )
        except InvalidInputError as exc:
            raise Unauthorized(str(exc)) from None
        data = _payload(body, request.headers.get("content-type", ""))
        if data.get("type") == "url_verification":
            return JSONResponse({"challenge": str(data.get("challenge", ""))})
        if not channel.ready.is_set():
            # Not knowing the bot's id yet, a mention would go unseen: Slack retries.
            return error_response(503, "Lore's Slack channel is still starting")
        try:
            if data.get("type") == "block_actions":
                channel.press(data)
            else:
                channel.accept(data)
        except StoreError as exc:  # not recorded: Slack must send it again
            return error_response(503, f"the event could not be recorded: {exc}")
        return Response(status_code=200)

    return router


def _payload(body: bytes, content_type: str) -> dict[str, Any]:
    """An event's JSON body, or an interactive call's form field `payload`."""
    try:
        if content_type.startswith("application/x-www-form-urlencoded"):
            (raw,) = parse_qs(body.decode("utf-8"), strict_parsing=True)["payload"]
            data = json.loads(raw)
        else:
            data = json.loads(body)
    except (UnicodeDecodeError, ValueError, KeyError):
        data = None
    if not isinstance(data, dict):
        raise InvalidInputError("the request body is not a Slack event or interaction")
    return data
