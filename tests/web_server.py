"""A real HTTP server on a loopback address, in a thread, answering from a table of routes:
the web that web_fetch and web_search are tested against."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Answer:
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the headers are sent
    repeat: int = 1  # the body sent this many times (a large page without a large bytes)


@dataclass(frozen=True)
class Seen:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


Route = Callable[[Seen], Answer]


@dataclass
class WebServer:
    host: str
    port: int
    routes: dict[str, Route]
    seen: list[Seen] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"


def page(
    body: str,
    content_type: str = "text/html; charset=utf-8",
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
    repeat: int = 1,
) -> Route:
    """A route answering `body`, encoded in the charset its content type names."""
    encoding = content_type.partition("charset=")[2] or "utf-8"
    answer = Answer(status, content_type, body.encode(encoding), headers or {}, delay, repeat)
    return lambda seen: answer


def redirect(location: str, status: int = 302) -> Route:
    return page("", "text/plain", status=status, headers={"Location": location})


@contextmanager
def web_server(routes: dict[str, Route], host: str = "127.0.0.1") -> Iterator[WebServer]:
    server_state: list[WebServer] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            seen = Seen(unquote(parts.path), parse_qs(parts.query), dict(self.headers.items()))
            state = server_state[0]
            state.seen.append(seen)
            route = state.routes.get(seen.path)
            answer = route(seen) if route else Answer(404, "text/plain", b"not here")
            if answer.delay:
                time.sleep(answer.delay)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body) * answer.repeat))
                self.end_headers()
                for _ in range(answer.repeat):
                    self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what a size limit does

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    server_state.append(WebServer(host, server.server_address[1], routes))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state[0]
    finally:
        server.shutdown()
        server.server_close()
