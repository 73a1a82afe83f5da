"""The gateway's HTTP server: uvicorn's, with bounded connections, stopping without
waiting on the owner.

A client gets `api.header_seconds` to send a request's headers (the first request's and
every later one's on a kept-alive connection) and an idle connection is closed after
`api.keep_alive_seconds`, so slow or idle clients cannot hold connections open forever.

uvicorn stops by letting every open response finish. A streamed reply whose tool waits
for Approve / Deny would hold it for the whole `approval_timeout`, so Ctrl+C would seem
to do nothing: this server refuses every waiting question first, and those replies end.
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from lore.channels.http.approvals import Desk

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from lore.config import ApiConfig

__all__ = ["STOPPING", "GatewayServer", "server_config"]

STOPPING = "no one (Lore was stopping)"


class GatewayServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, approvals: Desk) -> None:
        super().__init__(config)
        self.approvals = approvals

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.approvals.refuse_all(STOPPING)
        await super().shutdown(sockets)


def server_config(app: ASGIApp, api: ApiConfig) -> uvicorn.Config:
    """How `lore serve` (and the tests, the same way) runs the gateway's app."""

    class Protocol(_HeaderTimeout):
        header_seconds = api.header_seconds

    # proxy_headers off: only the proxies config trusts may say a request came over HTTPS.
    return uvicorn.Config(
        app,
        http=Protocol,
        log_level="warning",
        lifespan="on",
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=max(1, round(api.keep_alive_seconds)),
    )


class _HeaderTimeout(H11Protocol):
    """uvicorn's HTTP/1.1, sending each answer at once (TCP_NODELAY), and closing a
    connection whose request headers are not all in within `header_seconds` of the
    connection opening or the last response ending."""

    header_seconds = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        _no_delay(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self.conn.their_state is h11.IDLE:
            self._arm()  # a kept-alive connection starting its next request
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def _no_delay(transport: asyncio.Transport) -> None:
    """Send small writes at once. asyncio sets TCP_NODELAY only on sockets made with
    IPPROTO_TCP named; a listener made as `socket.socket()` has proto 0, so each answer's
    body waited ~40 ms for the client's delayed ACK of its headers (Nagle's algorithm)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
