"""What one client may ask of the gateway: a body of bounded size, and so many requests
a minute for each token or log-in.

A body over `api.max_body_kb` (`api.max_upload_mb` for a multipart upload) is refused with
413 before the route reads it: by its Content-Length when it has one, else as the bytes
arrive. A token (or a log-in's cookie) past `api.requests_per_minute` in the last minute
gets 429 with `Retry-After`, the seconds until it may ask again; `/health` and the page's
static files are not counted.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lore.channels.http.context import COOKIE, error_response

__all__ = ["BodyLimit", "RateLimit", "Window"]

_UNCOUNTED = ("/health", "/static/")
_WINDOW = 60.0  # seconds
_KEPT = 10_000  # callers remembered; the one heard from least recently goes first


class BodyTooLarge(HTTPException):
    def __init__(self, message: str) -> None:
        super().__init__(413, message)


class BodyLimit:
    """ASGI middleware: 413 for a body over its limit, counted before the route reads it."""

    def __init__(self, app: ASGIApp, *, body_bytes: int, upload_bytes: int) -> None:
        self.app = app
        self.body_bytes = body_bytes
        self.upload_bytes = upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        upload = headers.get("content-type", "").lower().startswith("multipart/form-data")
        limit = self.upload_bytes if upload else self.body_bytes
        problem = _too_large(limit, upload)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await error_response(413, problem)(scope, receive, send)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(problem)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:  # an app that let it through (MCP's): answered here
            if started:
                raise
            await error_response(413, problem)(scope, receive, send)


def _too_large(limit: int, upload: bool) -> str:
    if upload:
        size, setting = f"{limit // 2**20:,} MB", "api.max_upload_mb"
    else:
        size, setting = f"{limit // 2**10:,} KB", "api.max_body_kb"
    kind = "an upload" if upload else "a request body"
    return f"that is more than the {size} {kind} may hold (setting {setting})"


class Window:
    """Requests of each caller in the last minute; a caller past `limit` waits."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, caller: str) -> float:
        """0 when `caller` may ask now (counted), else the seconds until it may."""
        now = self.clock()
        times = self._seen.pop(caller, None) or deque()
        while times and times[0] <= now - _WINDOW:
            times.popleft()
        self._seen[caller] = times
        if len(self._seen) > _KEPT:
            self._seen.popitem(last=False)
        if len(times) >= self.limit:
            return times[0] + _WINDOW - now
        times.append(now)
        return 0.0


class RateLimit:
    """ASGI middleware: 429 with Retry-After for a token or log-in past its requests a minute."""

    def __init__(self, app: ASGIApp, *, window: Window) -> None:
        self.app = app
        self.window = window

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = _caller(scope) if scope["type"] == "http" else None
        if caller is None or str(scope.get("path", "")).startswith(_UNCOUNTED):
            await self.app(scope, receive, send)
            return
        wait = self.window.wait(caller)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            message = (
                f"more than {self.window.limit} requests in a minute from this token; "
                f"try again in {seconds} s (setting api.requests_per_minute)"
            )
            response = error_response(429, message, {"Retry-After": str(seconds)})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _caller(scope: Scope) -> str | None:
    """Whose request this is: a digest of its bearer token, else of its log-in cookie."""
    headers = Headers(scope=scope)
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        secret = "token:" + token.strip()
    else:
        cookie = _cookie(headers.get("cookie", ""))
        if not cookie:
            return None
        secret = "login:" + cookie
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def _cookie(header: str) -> str:
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value.strip()
    return ""
