"""A small OpenAI-compatible chat server on 127.0.0.1 for end-to-end tests.

Queue replies (`reply`, `error`, `tool_call`); every request body is recorded. A request
with `"stream": true` gets the reply as server-sent chunks, one without it as one
`chat.completion` object (what non-streaming clients such as the Agents SDK ask for).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._queue: deque[tuple[int, Any, dict[str, str]]] = deque()
        self._calls = 0
        self.chunk_delay = 0.0  # seconds between streamed chunks (crash tests kill mid-stream)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length))
                server.requests.append(request)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, payload, headers = (
                    server._queue.popleft() if server._queue else (500, {"error": "empty"}, {})
                )
                if status != 200:
                    body = json.dumps(payload).encode()
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if not request.get("stream"):
                    body = json.dumps(_completion(list(payload))).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                try:
                    for chunk in payload:
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if server.chunk_delay:
                            time.sleep(server.chunk_delay)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed mid-stream

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, text: str) -> FakeOpenAI:
        words = [text[i : i + 5] for i in range(0, len(text), 5)]
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": w}}]} for w in words
        ]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunks.append({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 5}})
        self._queue.append((200, chunks, {}))
        return self

    def tool_call(self, name: str, arguments: dict[str, Any]) -> FakeOpenAI:
        args = json.dumps(arguments)
        self._calls += 1
        delta = {
            "tool_calls": [
                {
                    "index": 0,
                    "id": f"call_{self._calls}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            ]
        }
        chunks = [
            {"choices": [{"index": 0, "delta": delta}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
        self._queue.append((200, chunks, {}))
        return self

    def clear(self) -> None:
        """Forget queued replies (a killed client never asked for them)."""
        self._queue.clear()

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> FakeOpenAI:
        self._queue.append((status, {"error": {"message": message}}, headers or {}))
        return self


def _completion(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The streamed chunks of one reply as the single object a non-streaming call gets."""
    text, finish = "", "stop"
    calls: list[dict[str, Any]] = []
    usage: dict[str, Any] = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            text += choice["delta"].get("content") or ""
            calls += choice["delta"].get("tool_calls") or []
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
    usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }
