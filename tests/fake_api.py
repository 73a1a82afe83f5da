"""What the fake chat APIs (LINE, Telegram) share: a threaded HTTP server on 127.0.0.1
that hands every request to the fake and writes back its JSON answer, the record of what
Lore sent, and a wait for it. Each fake says how it answers in `answer`."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeApi", "Request"]


@dataclass(frozen=True)
class Request:
    method: str  # "GET", "POST"
    path: str
    body: bytes
    headers: dict[str, str]  # names in lower case


class FakeApi:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_sent(self, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        """What Lore sent, once it is `count` items (or the time is up)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.sent) < count and time.monotonic() < deadline:
                self._changed.wait(0.05)
            return list(self.sent)

    def answer(self, request: Request) -> tuple[int, dict[str, Any]] | None:
        """The status and JSON body for `request`; None resets the connection instead."""
        raise NotImplementedError


def _handler(fake: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = fake.answer(Request(method, self.path, body, headers))
            if answer is None:
                # RST instead of an answer: a connection reset by the peer.
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.close_connection = True
                self.connection.close()
                return
            status, data = answer
            payload = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            self._serve("POST")

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
