"""What one client may ask of the gateway: bounded bodies and messages, so many requests
a minute, headers in time; and a maximum-size message never stalls anyone else."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.channels.http.limits import Window
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.events import CommandOutput
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from tests.gateway_server import Gateway, running_gateway

GUEST = """
[api.clients.guest]
token = "guest-token"
scopes = ["api:*"]
"""


def _config(home: Path, **flags: object) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(GUEST, encoding="utf-8")
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", **flags},
    )


@pytest.fixture
def small(home: Path, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    """A gateway with small limits: 16 KB bodies, 1 MB uploads, 1,000-character messages,
    5 requests a minute, half a second for headers."""
    config = _config(
        home,
        **{
            "extraction.enabled": False,
            "api.max_body_kb": 16,
            "api.max_upload_mb": 1,
            "max_message_chars": 1000,
            "api.requests_per_minute": 5,
            "api.header_seconds": 0.5,
        },
    )
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _nothing_kept(lore: Runtime, scope: str) -> bool:
    now = lore.clock.now()
    return not lore.sessions.live(scope).messages and not lore.memory.active(scope, now=now)


def _chat(text: str, **extra: object) -> dict[str, object]:
    return {"model": "lore", "messages": [{"role": "user", "content": text}], **extra}


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    small: Gateway, model: ScriptedProvider
) -> None:
    big = _chat("x" * 20_000, user="alice")
    with small.client("guest-token") as http:
        declared = http.post("/v1/chat/completions", json=big)
        memory = http.post("/api/memories", json={"scope": "api:alice", "content": "y" * 20_000})
        mcp = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "x", "p": "z" * 20_000})
    for reply in (declared, memory, mcp):
        assert reply.status_code == 413, reply.text
        message = reply.json()["error"]["message"]
        assert message == (
            "that is more than the 16 KB a request body may hold (setting api.max_body_kb)"
        )
    assert not model.requests
    assert _nothing_kept(small.lore, "api:alice")


def test_a_chunked_body_is_counted_as_it_arrives(small: Gateway, model: ScriptedProvider) -> None:
    def pieces() -> Iterator[bytes]:
        yield b'{"model": "lore", "user": "alice", "messages": [{"role": "user", "content": "'
        for _ in range(40):
            yield b"x" * 1024
        yield b'"}]}'

    with small.client("guest-token") as http:
        reply = http.post(
            "/v1/chat/completions", content=pieces(), headers={"Content-Type": "application/json"}
        )
    assert reply.status_code == 413
    assert "api.max_body_kb" in reply.json()["error"]["message"]
    assert not model.requests and _nothing_kept(small.lore, "api:alice")


def test_an_upload_has_its_own_larger_limit(small: Gateway) -> None:
    with small.client() as http:
        allowed = http.post("/api/memories", files={"file": ("a.bin", b"z" * 200_000)})
        refused = http.post("/api/memories", files={"file": ("a.bin", b"z" * 1_100_000)})
    assert allowed.status_code != 413  # past the limit check; the route itself refuses it
    assert refused.status_code == 413
    assert refused.json()["error"]["message"] == (
        "that is more than the 1 MB an upload may hold (setting api.max_upload_mb)"
    )


@pytest.mark.parametrize("text", ["a" * 1001, "我" * 1001, "ж" * 1500])
def test_a_message_over_the_limit_is_refused_and_nothing_of_it_is_kept(
    small: Gateway, model: ScriptedProvider, text: str
) -> None:
    with small.client("guest-token") as http:
        plain = http.post("/v1/chat/completions", json=_chat(text, user="alice"))
        streamed = http.post("/v1/chat/completions", json=_chat(text, user="alice", stream=True))
    for reply in (plain, streamed):
        assert reply.status_code == 400
        assert reply.json()["error"]["message"] == (
            f"that message is {len(text):,} characters; Lore takes at most 1,000 "
            "(setting max_message_chars); nothing of it was kept"
        )
    assert not model.requests
    assert _nothing_kept(small.lore, "api:alice")


async def test_every_channel_refuses_a_message_over_the_limit_before_keeping_it(
    home: Path, model: ScriptedProvider, clock: FixedClock
) -> None:
    lore = build(_config(home, max_message_chars=100), provider=model, clock=clock)
    try:
        seen: list[object] = []
        chat = lore.conversation("cli:default", emit=seen.append)
        outcome = await chat.send("Напомни мне " + "очень " * 30)
        assert isinstance(outcome.command, CommandOutput)
        assert "Lore takes at most 100 (setting max_message_chars)" in outcome.command.text
        assert seen == [outcome.command]  # what the channel shows
        assert not model.requests
        assert _nothing_kept(lore, "cli:default")
        model.reply("好的")
        answered = await chat.send("我们从花莲搬到台北了")  # under the limit: a turn as ever
        assert answered.result is not None and answered.result.text == "好的"
    finally:
        await lore.aclose()
        lore.db.close()


def test_a_token_past_its_requests_a_minute_waits(small: Gateway) -> None:
    with small.client("guest-token") as guest, small.client() as owner:
        answers = [guest.get("/v1/models") for _ in range(6)]
        health = [guest.get("/health") for _ in range(10)]
        others = owner.get("/v1/models")
    assert [a.status_code for a in answers] == [200] * 5 + [429]
    refused = answers[-1]
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"]["message"].startswith(
        "more than 5 requests in a minute from this token; try again in "
    )
    assert all(h.status_code == 200 for h in health)  # /health is never counted
    assert others.status_code == 200  # each token has its own minute


def test_the_window_lets_a_caller_in_again_as_its_minute_passes() -> None:
    now = [1000.0]
    window = Window(2, clock=lambda: now[0])
    assert window.wait("a") == 0 and window.wait("a") == 0
    assert window.wait("a") == pytest.approx(60.0)
    now[0] += 30
    assert window.wait("a") == pytest.approx(30.0)  # a refused request is not counted
    assert window.wait("b") == 0
    now[0] += 30.5
    assert window.wait("a") == 0


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    return True


def test_a_client_slow_to_send_its_headers_is_cut_off(small: Gateway) -> None:
    port = int(small.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
        assert _closed_within(slow, 5)
    with socket.create_connection(("127.0.0.1", port)) as kept:
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        kept.settimeout(5)
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /health HTTP/1.1\r\n")  # the next request on it, as slowly
        assert _closed_within(kept, 5)
    with socket.create_connection(("127.0.0.1", port)) as steady:
        steady.sendall(b"GET /health HTTP/1.1\r\n")
        time.sleep(0.2)
        steady.sendall(b"Host: 127.0.0.1\r\n\r\n")  # in time
        steady.settimeout(5)
        assert steady.recv(65536).startswith(b"HTTP/1.1 200")


def _words(count: int) -> str:
    words = ["morning", "coffee", "Taipei", "花莲", "台北", "жена", "Анна", "jazz", "trip"]
    return " ".join(f"{words[i % len(words)]}{i}" for i in range(count))


def test_health_answers_quickly_while_a_maximum_size_message_is_processed(
    home: Path, clock: FixedClock
) -> None:
    config = _config(home)
    text = _words(20_000)[: config.max_message_chars]
    model = ScriptedProvider(context_window=200_000)
    model.reply("Noted, that is a long one.")
    model.reply('[{"op": "add", "content": "User wrote a very long message", "kind": "fact"}]')
    lore = build(config, provider=model, clock=clock)
    slowest = 0.0
    done = threading.Event()
    try:
        with running_gateway(lore) as gateway:

            def send() -> None:
                try:
                    with gateway.client("guest-token") as http:
                        reply = http.post("/v1/chat/completions", json=_chat(text, user="al"))
                    assert reply.status_code == 200, reply.text
                    deadline = time.monotonic() + 60
                    while lore.background.pending and time.monotonic() < deadline:
                        time.sleep(0.05)
                finally:
                    done.set()

            sender = threading.Thread(target=send)
            with httpx.Client(base_url=gateway.url, timeout=10) as probe:
                probe.get("/health")
                sender.start()
                while not done.is_set():
                    started = time.perf_counter()
                    assert probe.get("/health").status_code == 200
                    slowest = max(slowest, time.perf_counter() - started)
                    time.sleep(0.01)
            sender.join()
        assert lore.memory.active("api:al", now=clock.now())  # the after-turn work did run
        assert len(lore.sessions.live("api:al").messages) == 2
    finally:
        lore.db.close()
    assert slowest < 0.2, f"/health took {slowest * 1000:.0f} ms while the message was processed"


def test_each_answer_is_sent_at_once_not_held_for_the_clients_ack(
    home: Path, model: ScriptedProvider, clock: FixedClock
) -> None:
    """A listener made as `socket.socket()` gets no TCP_NODELAY from asyncio, so each body
    waited ~40 ms behind its headers; the gateway's connections set it themselves."""
    import uvicorn

    from lore.channels.http import create_app
    from lore.channels.http.auth import Clients
    from lore.channels.http.server import server_config

    lore = build(_config(home, **{"extraction.enabled": False}), provider=model, clock=clock)
    app = create_app(lore, clients=Clients("t", lore.config), mcp=False)
    server = uvicorn.Server(server_config(app, lore.config.api))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with httpx.Client(base_url=url) as http:
            assert http.get("/health").status_code == 200
            options = [
                conn.transport.get_extra_info("socket").getsockopt(
                    socket.IPPROTO_TCP, socket.TCP_NODELAY
                )
                for conn in list(server.server_state.connections)
            ]
        assert options and all(options)
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()
        lore.db.close()


async def test_extraction_searches_and_writes_the_store_off_the_event_loop(
    home: Path, clock: FixedClock
) -> None:
    model = ScriptedProvider()
    model.reply("Got it.")
    model.reply('[{"op": "add", "content": "User loves jazz", "kind": "preference"}]')
    lore = build(_config(home), provider=model, clock=clock)
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}
    search, remember = lore.memory.search, lore.memory.remember

    def searched(*args: object, **kwargs: object) -> object:
        threads["search"] = threading.get_ident()
        return search(*args, **kwargs)  # type: ignore[arg-type]

    def remembered(*args: object, **kwargs: object) -> object:
        threads["remember"] = threading.get_ident()
        return remember(*args, **kwargs)  # type: ignore[arg-type]

    lore.memory.search = searched  # type: ignore[method-assign,assignment]
    lore.memory.remember = remembered  # type: ignore[method-assign,assignment]
    try:
        chat = lore.conversation("cli:default", emit=lambda event: None)
        await chat.send("I love jazz " * 50)
        await lore.background.drain()
        assert set(threads) == {"search", "remember"}
        assert loop_thread not in threads.values()
    finally:
        await lore.aclose()
        lore.db.close()
