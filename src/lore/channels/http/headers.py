"""The security headers every answer of the gateway carries.

The page runs only scripts it serves itself (no inline script, no eval), cannot be framed,
sends a Referer only to itself (`no-referrer` would make Chromium send `Origin: null` with
the page's own forms, which the CSRF check refuses), and its files are never sniffed into
another type. The interactive API
docs (/docs, /redoc) are FastAPI's, which load Swagger UI or ReDoc from a CDN with an
inline starter script: they get a policy that allows that, and are still never framed.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["PAGE_POLICY", "SecurityHeaders"]

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly; "
    "worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_DOCS = ("/docs", "/redoc")


def _headers(policy: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-security-policy", policy.encode()),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),
        (b"x-content-type-options", b"nosniff"),
    ]


_PAGE = _headers(PAGE_POLICY)
_DOCS_HEADERS = _headers(_DOCS_POLICY)
_NAMES = {name for name, _ in _PAGE}


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP answer (streamed ones too)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        extra = _DOCS_HEADERS if path.startswith(_DOCS) else _PAGE

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": kept + extra}
            await send(message)

        await self.app(scope, receive, send_with_headers)
