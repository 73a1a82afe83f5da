"""Server-sent events over httpx: the transport both HTTP providers stream through."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from lore.errors import ProviderConnectionError, ProviderResponseError, provider_error_for_status
from lore.llm.base import ChatRequest, StreamEvent
from lore.llm.retry import RetryPolicy, Sleep, retry_after_from_headers, stream_with_retry

__all__ = [
    "HTTPProvider",
    "SSEEvent",
    "decode_json",
    "iter_sse",
    "post_sse",
    "wire_index",
    "wire_object",
    "wire_objects",
]

_CONNECTION_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class SSEEvent:
    event: str
    data: str


async def iter_sse(lines: AsyncIterator[str]) -> AsyncGenerator[SSEEvent, None]:
    """Server-sent events from decoded lines: comments skipped, `data:` lines joined."""
    event = ""
    data: list[str] = []
    async for line in lines:
        if not line.strip():
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value.strip()
        elif name == "data":
            data.append(value)
    # Some servers close the stream without the final blank line.
    if data:
        yield SSEEvent(event or "message", "\n".join(data))


async def post_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    label: str,
    request_timeout: float,
) -> AsyncGenerator[SSEEvent, None]:
    """POST `body` and yield the reply's SSE events, mapping failures to `ProviderError`s."""
    answered = False
    try:
        async with client.stream(
            "POST", url, json=body, headers=headers, timeout=request_timeout
        ) as response:
            if response.status_code >= 400:
                raw = (await response.aread()).decode("utf-8", "replace")
                raise provider_error_for_status(
                    response.status_code,
                    raw,
                    provider=label,
                    retry_after=retry_after_from_headers(response.headers),
                )
            answered = True
            async for event in iter_sse(response.aiter_lines()):
                yield event
    except _CONNECTION_ERRORS as exc:
        reason = str(exc) or type(exc).__name__
        what = f"lost the connection to {label}" if answered else f"cannot reach {label} at {url}"
        raise ProviderConnectionError(f"{what}: {reason}") from exc


def decode_json(data: str, label: str) -> list[dict[str, Any]]:
    """Parse one SSE data payload; tolerate servers that send several JSON lines at once."""
    try:
        parsed = [json.loads(data)]
    except ValueError:
        try:
            parsed = [json.loads(line) for line in data.splitlines() if line.strip()]
        except ValueError as exc:
            raise ProviderResponseError(
                f"{label} sent a malformed stream event: {data[:200]!r}", body=data
            ) from exc
    if not all(isinstance(item, dict) for item in parsed):
        raise ProviderResponseError(f"{label} sent an unexpected stream event", body=data)
    return parsed


def wire_object(event: dict[str, Any], key: str, label: str) -> dict[str, Any]:
    """`event[key]` where the wire has an object there (absent or empty: {}); anything
    else is a malformed reply, said in one line rather than failing deep in a reader."""
    value = event.get(key)
    if not value:
        return {}
    if not isinstance(value, dict):
        raise _malformed(event, f"{key} is not an object", label)
    return value


def wire_objects(event: dict[str, Any], key: str, label: str) -> list[dict[str, Any]]:
    """`event[key]` where the wire has a list of objects (absent or empty: [])."""
    value = event.get(key)
    if not value:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _malformed(event, f"{key} is not a list of objects", label)
    return value


def wire_index(event: dict[str, Any], default: int, label: str) -> int:
    """`event["index"]`, a whole number (absent: `default`)."""
    value = event.get("index", default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _malformed(event, "index is not a whole number", label)
    return value


def _malformed(event: dict[str, Any], problem: str, label: str) -> ProviderResponseError:
    body = json.dumps(event, ensure_ascii=False)
    return ProviderResponseError(f"{label} sent a malformed reply: {problem}", body=body)


class HTTPProvider:
    """What both HTTP providers share: the client they may own, retries, closing.

    A subclass builds the request body and streams one attempt (`_stream_once`);
    `stream` retries that attempt while nothing has been shown yet.
    """

    supports_tools = True

    def __init__(
        self,
        model: str,
        *,
        name: str,
        context_window: int,
        base_url: str,
        api_key: str,
        client: httpx.AsyncClient | None,
        timeout: float,
        retry: RetryPolicy | None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.model = model
        self.name = name
        self.context_window = context_window
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._client = client
        self._owns_client = client is None
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        body = self.request_body(request)
        return stream_with_retry(lambda: self._stream_once(body), self._retry, self._sleep)

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _stream_once(self, body: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        raise NotImplementedError

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
        return self._client
