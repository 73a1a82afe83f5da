"""A real `lore serve` gateway on 127.0.0.1 (a free port), for tests: in a thread, or in
the test's own event loop (when channels running there share the runtime's bus)."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import httpx
import uvicorn

from lore.channels.http import create_app
from lore.channels.http.auth import Clients
from lore.channels.http.server import GatewayServer, server_config
from lore.runtime import Runtime

OWNER_TOKEN = "owner-token-for-tests"
CSRF_HEADER = "X-CSRF-Token"
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


@dataclass
class Gateway:
    url: str
    token: str
    lore: Runtime

    def client(self, token: str | None = None) -> httpx.Client:
        """An HTTP client for the gateway, with the owner's token unless told otherwise."""
        token = self.token if token is None else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def page(self, token: str | None = None) -> httpx.Client:
        """A client logged in to the web page as a browser is: the log-in cookie, no
        Authorization header, and the page's CSRF token on every request (as htmx and
        chat.js send it)."""
        token = self.token if token is None else token
        with httpx.Client(base_url=self.url, timeout=30) as browser:
            answer = browser.post("/login", data={"token": token}, follow_redirects=True)
            headers = {CSRF_HEADER: page_csrf(answer.text)}
            return httpx.Client(
                base_url=self.url, cookies=browser.cookies, headers=headers, timeout=30
            )


def page_csrf(html: str) -> str:
    """The CSRF token a page carries for its own requests."""
    found = _CSRF.search(html)
    assert found is not None, "the page carries no CSRF token (not logged in?)"
    return found.group(1)


@contextmanager
def running_gateway(lore: Runtime, *, token: str = OWNER_TOKEN) -> Iterator[Gateway]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = create_app(lore, clients=Clients(token, lore.config))
    server = GatewayServer(server_config(app, lore.config.api), app.state.gateway.approvals)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the gateway did not start")
        time.sleep(0.01)
    try:
        yield Gateway(f"http://127.0.0.1:{port}", token, lore)
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


@asynccontextmanager
async def gateway_in_loop(lore: Runtime, *, token: str = OWNER_TOKEN) -> AsyncIterator[str]:
    """The gateway app served by this event loop; yields its base URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    app = create_app(lore, clients=Clients(token, lore.config), mcp=False)
    server = uvicorn.Server(server_config(app, lore.config.api))
    web = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        for _ in range(1000):  # uvicorn says "started" by a flag, not an event
            if server.started:
                break
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(web, timeout=10)
        listener.close()
