"""Where `web_fetch` may connect: public addresses only, checked as the connection is made.

A host name is resolved here, every address it resolves to is checked, and the socket
is opened to one of those very addresses, so a name that answers one address to a check
and another to the connection (DNS rebinding) gets nowhere. The check sits in the
network backend of the HTTP client, so each redirect hop passes through it too, while
the request keeps its host name for the Host header and TLS (SNI, certificate).
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from lore.errors import ToolError
from lore.tools.web_addresses import (
    Networks,
    Resolver,
    WebAddressRefused,
    inside,
    refusal,
    system_resolver,
)

__all__ = ["GuardedTransport"]


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks every address, then connects to a checked one."""

    def __init__(self, resolve: Resolver, *, allow_private: bool, allowed: Networks) -> None:
        self.resolve = resolve
        self.allow_private = allow_private
        self.allowed = allowed
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._addresses(host, port)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def _addresses(self, host: str, port: int) -> list[str]:
        try:
            addresses = [str(ipaddress.ip_address(host.strip("[]")))]
            literal = True
        except ValueError:
            addresses = await self.resolve(host, port)
            literal = False
        if not addresses:
            raise ToolError(f"the host {host!r} resolved to no address")
        if not self.allow_private:
            for address in addresses:
                why = None if inside(address, self.allowed) else refusal(address)
                if why is not None:
                    shown = f"{host} is" if literal else f"{host} resolves to {address},"
                    raise WebAddressRefused(
                        f"{shown} {why}: web_fetch reaches public addresses only "
                        "(unless [web] allow_private = true in config.toml); nothing was fetched"
                    )
        return addresses

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpcore.Response) -> None:
        self.response = stream

    async def __aiter__(self) -> Any:
        with _as_httpx_errors():
            async for part in self.response.aiter_stream():
                yield part

    async def aclose(self) -> None:
        await self.response.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose connections go through the address guard (no proxy)."""

    def __init__(
        self,
        resolve: Resolver = system_resolver,
        *,
        allow_private: bool,
        allow_networks: Iterable[str] = (),
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        allowed = tuple(ipaddress.ip_network(n, strict=False) for n in allow_networks)
        backend = _GuardedBackend(resolve, allow_private=allow_private, allowed=allowed)
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(trust_env=False),
            max_connections=4,
            network_backend=backend,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self.pool.handle_async_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise httpx.TimeoutException(str(exc) or "timed out") from exc
    except httpcore.ConnectError as exc:
        raise httpx.ConnectError(str(exc) or "could not connect") from exc
    except httpcore.ProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc) or "broken HTTP") from exc
    except httpcore.NetworkError as exc:
        raise httpx.NetworkError(str(exc) or "network error") from exc
