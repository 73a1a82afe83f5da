"""`Client` and `AsyncClient`: the methods of `lore.Memory` against a running `lore serve`,
over its REST API, so a program moves from embedded memory to a server by one line:

    memory = Memory(home=...)          ->   memory = Client("http://127.0.0.1:8765", token=...)

Errors come back as the `lore.errors` classes the server raised (the API's one shape,
`{"error": {"status": N, "message": "..."}}`, mapped by status); 429 and 503 are tried
again after the server's `Retry-After` (or a short backoff), a bounded number of times.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lore import __version__
from lore.embedded import AsyncMemory
from lore.errors import (
    AuthenticationError,
    InvalidInputError,
    LoreError,
    NotFoundError,
    ProviderConnectionError,
    ProviderError,
    ProviderServerError,
    RateLimitError,
    StoreError,
)
from lore.records import (
    Added,
    Forgotten,
    HistoryEntry,
    MemoryBlock,
    MemoryRecord,
    ReminderRecord,
    SearchHit,
)
from lore.records import memory_id as checked_id

if TYPE_CHECKING:
    from lore.memory.intake import Said

__all__ = ["DEFAULT_URL", "AsyncClient", "Client", "error_for"]

DEFAULT_URL = "http://127.0.0.1:8765"  # where `lore serve` listens by default
_RETRIED = (429, 503)
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Call(Generic[_T]):
    """One request and how to read its answer: the same for the sync and async client."""

    method: str
    path: str
    read: Callable[[Any], _T]
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None


def error_for(status: int, body: str, *, retry_after: float | None = None) -> LoreError:
    """The `lore.errors` class standing for an answer of `lore serve` with `status`."""
    message = _message(body) or f"lore serve answered HTTP {status}"
    if status in (400, 413, 422):
        return InvalidInputError(message)
    if status == 404:
        return NotFoundError(message)
    if status == 409:
        return StoreError(message)
    if status in (401, 403):
        return AuthenticationError(message, status=status, body=body)
    if status == 429:
        return RateLimitError(message, status=status, body=body, retry_after=retry_after)
    if status in (500, 503, 504):
        return ProviderServerError(message, status=status, body=body, retry_after=retry_after)
    return ProviderError(message, status=status, body=body)


def _message(body: str) -> str:
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body.split())[:200]
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message else ""


def _retry_after(response: httpx.Response, now: float) -> float | None:
    """Seconds the server asks to wait: `Retry-After` as seconds or as an HTTP date."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


class _Calls:
    """The REST calls behind each method, built once for both clients."""

    def __init__(self, scope: str | None) -> None:
        self.scope = scope

    def _params(self, scope: str | None, **more: Any) -> dict[str, Any]:
        chosen = scope if scope is not None else self.scope
        found = {k: v for k, v in more.items() if v is not None}
        return found if chosen is None else {"scope": chosen, **found}

    def add(self, said: Said, scope: str | None, author: str | None) -> _Call[Added]:
        body: dict[str, Any] = {"author": author}
        if isinstance(said, str):
            body["text"] = said
        elif isinstance(said, Sequence):
            body["messages"] = [dict(m) if isinstance(m, Mapping) else m for m in said]
        else:
            raise InvalidInputError("add takes a text or a list of messages")
        return _Call("POST", "/api/memories/add", Added.from_dict, self._params(scope), body)

    def remember(
        self,
        text: str,
        scope: str | None,
        author: str | None,
        kind: str,
        keywords: Iterable[str],
    ) -> _Call[MemoryRecord]:
        body = {"content": text, "kind": kind, "keywords": list(keywords), "author": author}
        return _Call("POST", "/api/memories", MemoryRecord.from_dict, self._params(scope), body)

    def forget(
        self, memory_id: int | None, phrase: str | None, scope: str | None, everywhere: bool
    ) -> _Call[Forgotten]:
        if memory_id is not None:
            memory_id = checked_id(memory_id)
        body = {"id": memory_id, "phrase": phrase, "everywhere": everywhere}
        return _Call("POST", "/api/memories/forget", Forgotten.from_dict, self._params(scope), body)

    def search(
        self, query: str, scope: str | None, when: str | None, limit: int
    ) -> _Call[list[SearchHit]]:
        if not query.strip():
            raise InvalidInputError("a search needs some words")
        if not 1 <= limit <= 100:
            raise InvalidInputError(f"limit must be between 1 and 100, not {limit}")
        return _Call(
            "GET",
            "/api/search",
            lambda data: [SearchHit.from_dict(hit) for hit in data["results"]],
            self._params(scope, q=query, limit=limit, when=when),
        )

    def block(self, scope: str | None) -> _Call[MemoryBlock]:
        return _Call("GET", "/api/memories/block", MemoryBlock.from_dict, self._params(scope))

    def history(self, memory_id: int, scope: str | None) -> _Call[list[HistoryEntry]]:
        return _Call(
            "GET",
            f"/api/memories/{checked_id(memory_id)}/history",
            lambda data: [HistoryEntry.from_dict(e) for e in data["history"]],
            self._params(scope),
        )

    def reminders(self, scope: str | None, include_done: bool) -> _Call[list[ReminderRecord]]:
        return _Call(
            "GET",
            "/api/reminders",
            lambda data: [ReminderRecord.from_dict(r) for r in data["reminders"]],
            self._params(scope, include_done="true" if include_done else None),
        )


@dataclass(frozen=True)
class _Retry:
    """How often, and how long at most, to wait for a server that said 429 or 503."""

    attempts: int
    max_wait: float

    def wait(self, attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before the next try, or None to give up now."""
        if response.status_code not in _RETRIED or attempt + 1 >= self.attempts:
            return None
        asked = _retry_after(response, time.time())
        wait = min(0.5 * 2**attempt, self.max_wait) if asked is None else asked
        return None if wait > self.max_wait else wait


def _headers(token: str | None) -> dict[str, str]:
    headers = {"User-Agent": f"lore-client/{__version__}", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _answer(call: _Call[_T], response: httpx.Response) -> _T:
    if response.status_code >= 400:
        raise error_for(
            response.status_code,
            response.text,
            retry_after=_retry_after(response, time.time()),
        )
    return call.read(response.json())


def _unreachable(url: str, exc: httpx.HTTPError) -> ProviderConnectionError:
    return ProviderConnectionError(f"lore serve at {url} did not answer: {exc}")


def _body(call: _Call[Any]) -> dict[str, Any] | None:
    if call.body is None:
        return None
    return {k: v for k, v in call.body.items() if v is not None}


class AsyncClient:
    """`AsyncMemory`'s methods against `lore serve` at `url`, with `token` (the owner's,
    `lore serve --show-token`, or a client's). `scope` is the conversation of a call that
    names none (default: the token's own). 429 and 503 are tried again up to `attempts`
    times in all, never waiting more than `max_wait` seconds at once. `transport` replaces
    the network (httpx.MockTransport in tests)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        scope: str | None = None,
        timeout: float = 60.0,
        attempts: int = 3,
        max_wait: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._calls = _Calls(scope)
        self._retry = _Retry(max(1, attempts), max_wait)
        self._http = httpx.AsyncClient(
            base_url=self.url, headers=_headers(token), timeout=timeout, transport=transport
        )

    async def _send(self, call: _Call[_T]) -> _T:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, params=call.params, json=_body(call)
                )
            except httpx.HTTPError as exc:
                raise _unreachable(self.url, exc) from None
            wait = self._retry.wait(attempt, response)
            if wait is None:
                return _answer(call, response)
            attempt += 1
            await asyncio.sleep(wait)

    async def add(
        self, said: Said, *, scope: str | None = None, author: str | None = None
    ) -> Added:
        return await self._send(self._calls.add(said, scope, author))

    async def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        author: str | None = None,
        kind: str = "fact",
        keywords: Iterable[str] = (),
    ) -> MemoryRecord:
        return await self._send(self._calls.remember(text, scope, author, kind, keywords))

    async def forget(
        self,
        memory_id: int | None = None,
        *,
        phrase: str | None = None,
        scope: str | None = None,
        everywhere: bool = False,
    ) -> Forgotten:
        return await self._send(self._calls.forget(memory_id, phrase, scope, everywhere))

    async def search(
        self, query: str, *, scope: str | None = None, when: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        return await self._send(self._calls.search(query, scope, when, limit))

    async def block(self, scope: str | None = None) -> MemoryBlock:
        return await self._send(self._calls.block(scope))

    async def history(self, memory_id: int, *, scope: str | None = None) -> list[HistoryEntry]:
        return await self._send(self._calls.history(memory_id, scope))

    async def reminders(
        self, scope: str | None = None, *, include_done: bool = False
    ) -> list[ReminderRecord]:
        return await self._send(self._calls.reminders(scope, include_done))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()


class Client:
    """`Memory`'s methods against `lore serve`; see AsyncClient for the arguments."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        scope: str | None = None,
        timeout: float = 60.0,
        attempts: int = 3,
        max_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._calls = _Calls(scope)
        self._retry = _Retry(max(1, attempts), max_wait)
        self._http = httpx.Client(
            base_url=self.url, headers=_headers(token), timeout=timeout, transport=transport
        )

    def _send(self, call: _Call[_T]) -> _T:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method, call.path, params=call.params, json=_body(call)
                )
            except httpx.HTTPError as exc:
                raise _unreachable(self.url, exc) from None
            wait = self._retry.wait(attempt, response)
            if wait is None:
                return _answer(call, response)
            attempt += 1
            time.sleep(wait)

    def add(self, said: Said, *, scope: str | None = None, author: str | None = None) -> Added:
        return self._send(self._calls.add(said, scope, author))

    def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        author: str | None = None,
        kind: str = "fact",
        keywords: Iterable[str] = (),
    ) -> MemoryRecord:
        return self._send(self._calls.remember(text, scope, author, kind, keywords))

    def forget(
        self,
        memory_id: int | None = None,
        *,
        phrase: str | None = None,
        scope: str | None = None,
        everywhere: bool = False,
    ) -> Forgotten:
        return self._send(self._calls.forget(memory_id, phrase, scope, everywhere))

    def search(
        self, query: str, *, scope: str | None = None, when: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        return self._send(self._calls.search(query, scope, when, limit))

    def block(self, scope: str | None = None) -> MemoryBlock:
        return self._send(self._calls.block(scope))

    def history(self, memory_id: int, *, scope: str | None = None) -> list[HistoryEntry]:
        return self._send(self._calls.history(memory_id, scope))

    def reminders(
        self, scope: str | None = None, *, include_done: bool = False
    ) -> list[ReminderRecord]:
        return self._send(self._calls.reminders(scope, include_done))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


# Each method does what Memory's does, and says so the same way.
for _class in (Client, AsyncClient):
    for _name in ("add", "remember", "forget", "search", "block", "history", "reminders"):
        getattr(_class, _name).__doc__ = getattr(AsyncMemory, _name).__doc__
del _class, _name
