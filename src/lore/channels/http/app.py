"""The gateway's web application: one FastAPI app for the OpenAI-compatible API, the
memory REST API, the web page and MCP, with one way to authenticate and one error shape.

Every error is `{"error": {"status": N, "message": "one line"}}`; nothing answers with a
traceback. Every route but `/health` (and the page's login form) needs a token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from lore import __version__
from lore.channels.http.auth import Clients, Forbidden, Unauthorized
from lore.channels.http.context import Gateway, error_response
from lore.channels.http.headers import SecurityHeaders
from lore.channels.http.limits import BodyLimit, RateLimit, Window
from lore.channels.http.server import STOPPING
from lore.channels.http.turns import Turns
from lore.errors import (
    ConfigError,
    DatabaseUnavailable,
    InvalidInputError,
    LoreError,
    NotFoundError,
    ProviderError,
    SessionError,
    StoreError,
)
from lore.health import HEALTH

if TYPE_CHECKING:
    from collections.abc import Sequence

    from lore.channels.plugin import Channel
    from lore.runtime import Runtime

__all__ = ["create_app", "status_of"]

log = logging.getLogger(__name__)

_LOCATIONS = ("body", "query", "path", "header", "cookie")  # where, not what: left out


def create_app(
    lore: Runtime,
    *,
    clients: Clients,
    host: str = "127.0.0.1",
    mcp: bool = True,
    channels: Sequence[Channel] = (),
) -> FastAPI:
    """The gateway for `lore`. `host` is where it listens (MCP guards loopback Host headers);
    it takes the webhook calls of the chat `channels` given (LINE's at /line/webhook...)."""
    from lore.channels.http import (
        docs,
        imports_api,
        memories_api,
        metrics_api,
        openai_api,
        reminders_api,
        sessions_api,
        tasks_api,
        web,
        web_imports,
    )

    state = Gateway(lore, clients, Turns(lore))
    mcp_server = None
    if mcp:
        from lore.channels.mcp import build_mcp_server

        mcp_server = build_mcp_server(lore, clients=clients)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await asyncio.to_thread(_warm_up, lore)
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            yield
            # Replies whose client left, then their after-turn work, finish before exit;
            # a tool still waiting for Approve / Deny is refused rather than waited for.
            state.approvals.refuse_all(STOPPING)
            await asyncio.gather(*state.running, return_exceptions=True)
            for channel in channels:
                await channel.drain()
            if "background" in lore.__dict__:
                await lore.background.drain()

    app = FastAPI(
        title="Lore",
        version=__version__,
        description="Lore's gateway: an OpenAI-compatible chat API, the memory REST API, "
        "a web page and MCP. Authenticate with `Authorization: Bearer TOKEN` "
        "(`lore serve --show-token`).",
        lifespan=lifespan,
        # Served by lore.channels.http.docs, behind the token; no ReDoc.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.gateway = state
    api = lore.config.api
    if api.requests_per_minute:
        app.add_middleware(RateLimit, window=Window(api.requests_per_minute))
    app.add_middleware(
        BodyLimit, body_bytes=api.max_body_kb * 2**10, upload_bytes=api.max_upload_mb * 2**20
    )
    app.add_middleware(SecurityHeaders)  # the last added runs first: on every answer
    _install_error_handlers(app)

    @app.get("/health", tags=["gateway"])
    async def health() -> dict[str, Any]:
        """Up, and what each part last reported (never read from the database): `ok`, or
        `degraded` while the database cannot be reached (the process is up: a service
        manager should not restart it for that)."""
        backend = "postgresql" if lore.config.database_url else "sqlite"
        database = lore.database_state()
        status = "degraded" if database.state == "unreachable" else "ok"
        return {
            "status": status,
            "version": __version__,
            "backend": backend,
            "database": database.to_dict(),
            **HEALTH.to_dict(),
        }

    app.include_router(openai_api.router)
    app.include_router(memories_api.router)
    app.include_router(reminders_api.router)
    app.include_router(tasks_api.router)
    app.include_router(sessions_api.router)
    app.include_router(imports_api.router)
    app.include_router(web.router)
    app.include_router(web_imports.router)
    app.include_router(docs.router)
    app.include_router(metrics_api.router)
    web.mount_static(app)
    for channel in channels:
        routes = channel.routes()
        if routes is not None:
            app.include_router(routes)
    if mcp_server is not None:
        from lore.channels.mcp import mount_mcp

        mount_mcp(app, mcp_server, clients=clients, host=host)
    return app


def _warm_up(lore: Runtime) -> None:
    """Load now, in a worker thread, what the first chat would load on the event loop:
    the features and their tools (their imports), and jieba's dictionary (a single call
    of ~0.4 s that holds every other thread, the loop's too)."""
    from lore.text import warm_up

    lore.tools  # noqa: B018 (a cached property: loading it is the point)
    warm_up()


def status_of(exc: LoreError) -> int:
    """The HTTP status a Lore error stands for."""
    if isinstance(exc, Unauthorized):
        return 401
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, NotFoundError | SessionError):
        return 404
    if isinstance(exc, InvalidInputError | ConfigError):
        return 400
    if isinstance(exc, DatabaseUnavailable):
        return 503
    if isinstance(exc, StoreError):
        return 409
    if isinstance(exc, ProviderError):
        return 502
    return 400


def _install_error_handlers(app: FastAPI) -> None:
    async def lore_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, LoreError)
        status = status_of(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if isinstance(exc, DatabaseUnavailable):  # passing: say when to ask again
            headers = {"Retry-After": str(exc.retry_after)}
        return error_response(status, str(exc), headers)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}"
        if exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return error_response(exc.status_code, message, dict(exc.headers or {}) or None)

    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, _first_problem(exc.errors()))

    async def crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return error_response(500, "Lore failed to answer; the server log has the details")

    app.add_exception_handler(LoreError, lore_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(Exception, crash)


def _first_problem(errors: Any) -> str:
    """One line for the first thing wrong with a request: where, and what."""
    for error in errors:
        where = [
            str(part)
            for part in error.get("loc", ())
            if part not in ("body", "query", "path", "header")
        ]
        place = ".".join(where) or "request body"
        message = str(error.get("msg", "is invalid"))
        if error.get("type") == "missing":
            return f"{place} is required"
        if error.get("type") == "json_invalid":
            return "the request body is not valid JSON"
        return f"{place}: {message}"
    return "the request is invalid"
