"""What every route of the gateway shares: the runtime, who is calling, one error shape."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.responses import JSONResponse

from lore.channels.http.approvals import Desk
from lore.channels.http.auth import Client, Clients
from lore.channels.http.turns import Turns

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["COOKIE", "Gateway", "caller", "error_response", "gateway"]

COOKIE = "lore_token"


@dataclass
class Gateway:
    """What every route shares: the runtime, who may call, and the turn runner."""

    lore: Runtime
    clients: Clients
    turns: Turns
    # Replies still running after their client went away: kept so they finish.
    running: set[asyncio.Task[None]] = field(default_factory=set)
    # Tools waiting for the owner's Approve / Deny on the web page.
    approvals: Desk = field(default_factory=Desk)


def gateway(request: Request) -> Gateway:
    found: Gateway = request.app.state.gateway
    return found


def caller(request: Request) -> Client:
    """The client behind this request's bearer token (or the page's login cookie)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        token = request.cookies.get(COOKIE, "")
    return gateway(request).clients.identify(token.strip())


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"status": status, "message": message}}, status_code=status, headers=headers
    )
