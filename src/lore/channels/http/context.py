"""What every route of the gateway shares: the runtime, who is calling, one error shape."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.responses import JSONResponse

from lore.channels.http.approvals import Desk
from lore.channels.http.auth import Client, Clients, Unauthorized
from lore.channels.http.logins import Login, Logins
from lore.channels.http.origin import SAFE_METHODS, check_from_page
from lore.channels.http.turns import Turns

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["COOKIE", "Gateway", "caller", "error_response", "gateway", "page_login"]

COOKIE = "lore_login"  # a log-in's id (see logins.py), never a token


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
    logins: Logins = field(init=False)

    def __post_init__(self) -> None:
        config = self.lore.config
        self.logins = Logins(config.web_logins_path, timedelta(days=config.api.login_days))


def gateway(request: Request) -> Gateway:
    found: Gateway = request.app.state.gateway
    return found


async def caller(request: Request) -> Client:
    """The client behind this request's bearer token, or the page's log-in cookie; a
    change asked with the cookie must also come from the page itself (origin.py)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    state = gateway(request)
    if scheme.lower() == "bearer" and token.strip():
        return state.clients.identify(token.strip())
    login = page_login(request)
    if login is None:
        raise Unauthorized("a valid token is required (Authorization: Bearer TOKEN)")
    if request.method not in SAFE_METHODS:
        await check_from_page(request, login, state.lore.config.api)
    return state.clients.by_fingerprint(login.fingerprint)


def page_login(request: Request) -> Login | None:
    """The open log-in behind this request's cookie, if any."""
    state = gateway(request)
    return state.logins.find(request.cookies.get(COOKIE, ""), state.lore.clock.now())


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"status": status, "message": message}}, status_code=status, headers=headers
    )
