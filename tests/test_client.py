"""`lore.Client` and `lore.AsyncClient`: Memory's methods against a real `lore serve` on
127.0.0.1, the API's errors as lore.errors classes, and bounded retries on 429/503."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import lore
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.errors import (
    AuthenticationError,
    InvalidInputError,
    NotFoundError,
    ProviderConnectionError,
    ProviderServerError,
    RateLimitError,
)
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway

CLIENTS_TOML = """
[api.clients.family]
token = "family-token"
scopes = ["api:family"]
"""

_OPS = [{"op": "add", "content": "约翰的女儿叫小美", "kind": "relation"}]


def _config(home: Path, **flags: Any) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CLIENTS_TOML, encoding="utf-8")
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", **flags},
    )


@pytest.fixture
def served(tmp_path: Path, clock: FixedClock) -> Iterator[Gateway]:
    model = ScriptedProvider()
    runtime = build(_config(tmp_path / "served"), provider=model, clock=clock)
    with running_gateway(runtime) as gateway:
        yield gateway
    runtime.close()


def _program(memory: lore.Memory | lore.Client) -> list[object]:
    """A program using Lore's memory: the same lines, embedded or against a server."""
    done: list[object] = []
    done.append(memory.remember("John lives in Hualien", kind="profile"))
    done.append(memory.remember("Иван живёт в Казани", keywords=["город"]))
    done.append(memory.add("我女儿叫小美"))
    done.append(memory.search("Казани"))
    done.append(memory.search("小美", when="2026-11"))
    done.append(memory.search("Hualien", when="last year"))
    done.append(memory.block())
    done.append(memory.forget(phrase="Hualien"))
    done.append(memory.history(1))
    done.append(memory.reminders())
    done.append(memory.search("Hualien"))
    return done


def test_the_same_program_runs_embedded_and_against_lore_serve(
    served: Gateway, tmp_path: Path, clock: FixedClock
) -> None:
    served.lore.provider.reply(json.dumps(_OPS, ensure_ascii=False))  # type: ignore[attr-defined]
    with lore.Client(served.url, token=served.token) as client:
        remote = _program(client)
    model = ScriptedProvider().reply(json.dumps(_OPS, ensure_ascii=False))
    config = _config(tmp_path / "embedded")
    with lore.Memory(config=config, provider=model, clock=clock) as memory:
        local = _program(memory)
    assert remote == local
    added = remote[2]
    assert isinstance(added, lore.Added) and added.extracted
    assert [m.content for m in added.memories] == ["约翰的女儿叫小美"]
    hits = remote[3]
    assert isinstance(hits, list)
    [hit] = hits
    assert isinstance(hit, lore.SearchHit) and hit.text == "Иван живёт в Казани"
    assert remote[5] == [] and remote[-1] == []


async def test_the_async_client_against_lore_serve(served: Gateway) -> None:
    async with lore.AsyncClient(served.url, token=served.token, scope="api:family") as client:
        noted = await client.remember("Мама любит розы", author="mary")
        assert (noted.author, noted.content) == ("mary", "Мама любит розы")
        [hit] = await client.search("розы")
        assert hit.id == noted.id and hit.scope == "api:family"
        block = await client.block()
        assert block.shown == (noted.id,) and "Мама любит розы" in block.text
        [entry] = await client.history(noted.id)
        assert (entry.action, entry.actor, entry.via) == ("add", "mary", "api")
        gone = await client.forget(noted.id)
        assert gone.erased == (noted.id,)
        assert await client.search("розы") == []
        with pytest.raises(NotFoundError):
            await client.forget(noted.id)


@pytest.mark.parametrize(
    ("token", "call", "error", "status"),
    [
        ("wrong-token", lambda c: c.block(), AuthenticationError, 401),
        ("family-token", lambda c: c.block("api:default"), AuthenticationError, 403),
        ("family-token", lambda c: c.remember("x", author="mary"), AuthenticationError, 403),
        ("family-token", lambda c: c.forget(1, everywhere=True), AuthenticationError, 403),
        (None, lambda c: c.history(4242), NotFoundError, None),
        (None, lambda c: c.history("../block"), InvalidInputError, None),
        (None, lambda c: c.forget(phrase="nothing like it"), NotFoundError, None),
        (None, lambda c: c.remember("x" * 501), InvalidInputError, None),
        (None, lambda c: c.search("x", when="a fortnight of Sundays"), InvalidInputError, None),
        (None, lambda c: c.add([{"role": "robot", "content": "hi"}]), InvalidInputError, None),
    ],
)
def test_the_api_errors_come_back_as_lore_errors(
    served: Gateway,
    token: str | None,
    call: Callable[[lore.Client], object],
    error: type[Exception],
    status: int | None,
) -> None:
    with lore.Client(served.url, token=token or served.token) as client:
        with pytest.raises(error) as raised:
            call(client)
    assert "\n" not in str(raised.value) and str(raised.value)
    if status is not None:
        assert getattr(raised.value, "status", None) == status


def test_a_phrase_several_memories_hold_is_refused_naming_them(served: Gateway) -> None:
    with lore.Client(served.url, token=served.token) as client:
        first = client.remember("约翰每天早上喝咖啡")
        second = client.remember("约翰的咖啡杯是蓝色的")
        with pytest.raises(InvalidInputError) as refused:
            client.forget(phrase="咖啡")
    assert f"#{first.id}" in str(refused.value) and f"#{second.id}" in str(refused.value)


def test_past_the_rate_limit_the_wait_asked_is_bounded(tmp_path: Path, clock: FixedClock) -> None:
    config = _config(tmp_path / "limited", **{"api.requests_per_minute": 2})
    runtime = build(config, provider=ScriptedProvider(), clock=clock)
    with running_gateway(runtime) as gateway:
        with lore.Client(gateway.url, token=gateway.token, max_wait=0.2) as client:
            client.block()
            client.block()
            with pytest.raises(RateLimitError) as limited:
                client.block()  # the server asks for a wait of seconds: not waited for
    runtime.close()
    assert limited.value.status == 429 and (limited.value.retry_after or 0) >= 1


def _answers(*replies: httpx.Response) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(replies)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return httpx.MockTransport(handle), seen


def _error(status: int, retry_after: str | None = None) -> httpx.Response:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    body = {"error": {"status": status, "message": f"busy ({status})"}}
    return httpx.Response(status, json=body, headers=headers)


def _block() -> httpx.Response:
    return httpx.Response(200, json={"text": "<long_term_memory/>", "shown": [], "hidden": 0})


def test_429_and_503_are_tried_again_after_retry_after() -> None:
    transport, seen = _answers(_error(503, "0"), _error(429, "0.01"), _block())
    with lore.Client("http://lore.test", token="t", transport=transport) as client:
        assert client.block().text == "<long_term_memory/>"
    assert len(seen) == 3 and seen[0].headers["authorization"] == "Bearer t"


def test_retries_stop_after_the_attempts_given() -> None:
    transport, seen = _answers(_error(503, "0"))
    with lore.Client("http://lore.test", transport=transport, attempts=2) as client:
        with pytest.raises(ProviderServerError, match=r"busy \(503\)"):
            client.block()
    assert len(seen) == 2


def test_other_errors_and_long_waits_are_not_tried_again() -> None:
    transport, seen = _answers(_error(500, "0"))
    with lore.Client("http://lore.test", transport=transport) as client:
        with pytest.raises(ProviderServerError):
            client.block()
    transport, seen = _answers(_error(429, "Wed, 21 Oct 2099 07:28:00 GMT"), _block())
    with lore.Client("http://lore.test", transport=transport, max_wait=5) as client:
        with pytest.raises(RateLimitError) as limited:
            client.block()
    assert len(seen) == 1 and (limited.value.retry_after or 0) > 5


async def test_the_async_client_retries_too() -> None:
    seen: list[httpx.Request] = []
    replies = [_error(503, "0"), _block()]

    async def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return replies.pop(0)

    transport = httpx.MockTransport(handle)
    async with lore.AsyncClient("http://lore.test", transport=transport) as client:
        assert (await client.block()).hidden == 0
    assert len(seen) == 2


def test_no_server_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with lore.Client(f"http://127.0.0.1:{port}", attempts=1) as client:
        with pytest.raises(ProviderConnectionError, match="did not answer"):
            client.block()
