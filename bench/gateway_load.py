"""Load on `lore serve`'s chat endpoint, beside a bare FastAPI echo endpoint in the same run.

    python bench/gateway_load.py [--duration 60] [--clients 50] [--shared 5] [--json]
                                 [--postgres | --database-url URL]

A child process serves two apps on 127.0.0.1: Lore's gateway with the scripted provider
(each reply is "re: " + the message, with no delay, so what is timed is Lore's own work:
auth, session load, context, window, persist with fsync, events, JSON/SSE) and a bare
FastAPI endpoint answering the same request with the same JSON shape (the baseline).
This process runs the clients: --clients on a scope each plus --shared on one scope,
every client sending numbered messages one after another (every third one streamed),
first against the echo for a quarter of the duration, then against Lore for the duration.

Afterwards every session file is read back: zero errors, no message lost, every user
line followed by its own reply (no interleaving), and each client's messages in the
order it sent them, or the run fails (exit 1).

The child also measures how late its event loop wakes (a 10 ms tick, lateness p50, p95,
max): the stores are synchronous, so every query and fsync a turn makes holds the loop.
With --postgres (the embedded server of the tests) or --database-url, memories,
reminders and the search index are in PostgreSQL, reached through the same synchronous
calls over a connection pool; run it once without and once with to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

TOKEN = "bench-token"
SHARED = "api:shared"


# -- the server side (child process) -------------------------------------------------------


def serve(home: Path, database_url: str = "") -> None:
    import socket

    import uvicorn

    from lore.channels.http import create_app
    from lore.channels.http.auth import Clients
    from lore.config import load_config
    from lore.llm.base import ChatRequest
    from lore.llm.scripted import ScriptedProvider, Step
    from lore.runtime import build

    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench", "LORE_DATABASE_URL": database_url},
        flags={
            "model": "scripted",
            "timezone": "UTC",
            "extraction.enabled": False,
            "api.requests_per_minute": 0,  # every client shares one token here
        },
    )
    model = ScriptedProvider(context_window=128_000)

    def echo(request: ChatRequest) -> Step:
        model.requests.clear()  # the scripted provider keeps every request; not here
        users = [m for m in request.messages if m.get("role") == "user"]
        text = str(users[-1].get("content", "")) if users else "ok"
        return Step(text=f"re: {text}", chunk_size=16)

    model.default = echo
    lore = build(config, provider=model)
    gateway = create_app(lore, clients=Clients(TOKEN, config), mcp=False)

    bare = FastAPI()

    @bare.post("/v1/chat/completions", response_model=None)
    async def completions(request: Request) -> dict[str, Any] | StreamingResponse:
        body = await request.json()
        reply = f"re: {body['messages'][-1]['content']}"
        if body.get("stream"):
            return StreamingResponse(_echo_chunks(reply), media_type="text/event-stream")
        return {
            "id": "chatcmpl-echo",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "echo",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop",
                }
            ],
        }

    servers = []
    ports = []
    for app in (gateway, bare):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        ports.append(sock.getsockname()[1])
        # Keep-alive longer than any wait under load: a pooled connection the server
        # closes just as a client reuses it is a client-side race, not what is measured.
        settings = uvicorn.Config(
            app, log_level="error", lifespan="on", access_log=False, timeout_keep_alive=120
        )
        server = uvicorn.Server(settings)
        servers.append((server, sock))
    print(json.dumps({"lore": ports[0], "echo": ports[1]}), flush=True)

    lateness: list[float] = []

    async def tick() -> None:
        """How late the loop wakes from a 10 ms sleep: how long something held it."""
        while True:
            began = time.perf_counter()
            await asyncio.sleep(0.01)
            lateness.append((time.perf_counter() - began - 0.01) * 1000)

    async def main() -> None:
        tasks = [asyncio.create_task(s.serve(sockets=[sock])) for s, sock in servers]
        ticker = asyncio.create_task(tick())
        # The parent closes our stdin when it is done.
        await asyncio.to_thread(sys.stdin.read)
        ticker.cancel()
        for server, _ in servers:
            server.should_exit = True
        await asyncio.gather(*tasks)
        await lore.aclose()
        ordered = sorted(lateness) or [0.0]
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        loop = {"p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}
        print(json.dumps({"loop_lateness_ms": loop}), flush=True)

    asyncio.run(main())


async def _echo_chunks(reply: str) -> AsyncIterator[str]:
    """The same chunks Lore sends: a role, the text 16 characters at a time, a stop."""
    deltas = [{"role": "assistant", "content": ""}]
    deltas += [{"content": reply[i : i + 16]} for i in range(0, len(reply), 16)]
    for n, delta in enumerate([*deltas, {}]):
        finish = "stop" if n == len(deltas) else None
        chunk = {
            "id": "chatcmpl-echo",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": "echo",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"


# -- the client side --------------------------------------------------------------------------


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


async def client(
    http: httpx.AsyncClient, name: str, scope: str, deadline: float, phase: Phase
) -> None:
    number = 0
    while time.perf_counter() < deadline:
        number += 1
        text = f"{name} #{number} 你好 привет"
        stream = number % 3 == 0
        body = {"model": "lore", "stream": stream, "messages": [{"role": "user", "content": text}]}
        headers = {"X-Lore-Session": scope}
        start = time.perf_counter()
        try:
            if stream:
                reply = ""
                async with http.stream(
                    "POST", "/v1/chat/completions", json=body, headers=headers
                ) as r:
                    if r.status_code != 200:
                        raise RuntimeError(f"HTTP {r.status_code}")
                    async for line in r.aiter_lines():
                        if line.startswith("data: {"):
                            chunk = json.loads(line[6:])
                            if "error" in chunk:
                                raise RuntimeError(chunk["error"]["message"])
                            reply += chunk["choices"][0]["delta"].get("content") or ""
            else:
                r = await http.post("/v1/chat/completions", json=body, headers=headers)
                if r.status_code != 200:
                    raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
                reply = r.json()["choices"][0]["message"]["content"]
            if reply != f"re: {text}":
                raise RuntimeError(f"wrong reply {reply!r} to {text!r}")
        except Exception as exc:  # every failure counts; the run goes on
            phase.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        phase.latencies.append(time.perf_counter() - start)
        phase.sent[scope].append(text)


async def run_phase(
    url: str, clients: int, shared: int, seconds: float, prefix: str = "load"
) -> Phase:
    phase = Phase()
    limits = httpx.Limits(max_connections=clients + shared + 10)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as http:
        deadline = time.perf_counter() + seconds
        jobs = [client(http, f"c{i}", f"api:{prefix}-{i}", deadline, phase) for i in range(clients)]
        jobs += [client(http, f"s{i}", SHARED, deadline, phase) for i in range(shared)]
        await asyncio.gather(*jobs)
    return phase


def check_sessions(home: Path, phase: Phase) -> list[str]:
    """Every line kept, each user line followed by its own reply, each client in order."""
    from lore.backends.local.sessions import LocalSessions

    sessions = LocalSessions(home / "sessions", home)
    problems: list[str] = []
    for scope, sent in phase.sent.items():
        messages = sessions.live(scope).messages
        users = [m for m in messages if m["role"] == "user"]
        if sorted(str(m["content"]) for m in users) != sorted(sent):
            problems.append(f"{scope}: {len(users)} user lines kept, {len(sent)} answered")
        for i, message in enumerate(messages):
            if message["role"] != "user":
                continue
            after = messages[i + 1] if i + 1 < len(messages) else None
            if (
                after is None
                or after["role"] != "assistant"
                or after.get("content") != f"re: {message['content']}"
            ):
                problems.append(f"{scope}: line {i} is not followed by its own reply")
                break
        by_client: dict[str, list[int]] = defaultdict(list)
        for message in users:
            who, number = str(message["content"]).split()[:2]
            by_client[who].append(int(number.lstrip("#")))
        for who, numbers in by_client.items():
            if numbers != sorted(numbers):
                problems.append(f"{scope}: {who}'s messages are out of order")
    return problems


def percentiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0] * 1000 if values else 0.0, values[0] * 1000 if values else 0.0)
    cuts = statistics.quantiles(values, n=100)
    return statistics.median(values) * 1000, cuts[94] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of Lore load")
    parser.add_argument("--clients", type=int, default=50, help="clients on a scope each")
    parser.add_argument("--shared", type=int, default=5, help="clients on one shared scope")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--serve", metavar="HOME", help=argparse.SUPPRESS)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--database-url", default="", metavar="URL", help="stores in PostgreSQL")
    where.add_argument(
        "--postgres", action="store_true", help="stores in a throwaway embedded PostgreSQL"
    )
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve), args.database_url)
        return 0
    server = None
    if args.postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.postgres_server import EmbeddedPostgres

        server = EmbeddedPostgres().start()
        args.database_url = server.create_database()
    try:
        return run(args)
    finally:
        if server is not None:
            server.stop()


def run(args: argparse.Namespace) -> int:

    with tempfile.TemporaryDirectory(prefix="lore-gateway-load-") as tmp:
        home = Path(tmp)
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(home), "--database-url", args.database_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "LORE_HOME": str(home)},
        )
        assert child.stdin is not None and child.stdout is not None
        try:
            ports = json.loads(child.stdout.readline())
            echo_url = f"http://127.0.0.1:{ports['echo']}"
            lore_url = f"http://127.0.0.1:{ports['lore']}"
            alone = max(args.duration / 12, 2)
            print(f"one client alone: echo, then lore, {alone:.0f} s each", file=sys.stderr)
            echo_alone = asyncio.run(run_phase(echo_url, 1, 0, alone, "alone"))
            lore_alone = asyncio.run(run_phase(lore_url, 1, 0, alone, "alone"))
            total = args.clients + args.shared
            print(f"echo baseline: {total} clients for {args.duration / 4:.0f} s", file=sys.stderr)
            echo = asyncio.run(
                run_phase(
                    f"http://127.0.0.1:{ports['echo']}",
                    args.clients,
                    args.shared,
                    args.duration / 4,
                )
            )
            print(f"lore: {total} clients for {args.duration:.0f} s", file=sys.stderr)
            lore = asyncio.run(run_phase(lore_url, args.clients, args.shared, args.duration))
        finally:
            child.stdin.close()
            tail = child.stdout.read()
            child.wait(timeout=60)
        problems = check_sessions(home, lore) + check_sessions(home, lore_alone)

    loop = next(
        (json.loads(line)["loop_lateness_ms"] for line in tail.splitlines() if "loop_" in line),
        {"p50": 0.0, "p95": 0.0, "max": 0.0},
    )
    lore_p50, lore_p95 = percentiles(lore.latencies)
    echo_p50, echo_p95 = percentiles(echo.latencies)
    alone_p50, alone_p95 = percentiles(lore_alone.latencies)
    bare_p50, bare_p95 = percentiles(echo_alone.latencies)
    phases = {"echo alone": echo_alone, "lore alone": lore_alone, "echo": echo, "lore": lore}
    errors = [f"{name}: {error}" for name, phase in phases.items() for error in phase.errors]
    figures = {
        "requests": len(lore.latencies),
        "requests_per_s": len(lore.latencies) / args.duration,
        "errors": len(errors),
        "alone_lore_p50_ms": alone_p50,
        "alone_lore_p95_ms": alone_p95,
        "alone_echo_p50_ms": bare_p50,
        "alone_echo_p95_ms": bare_p95,
        "session_problems": len(problems),
        "lore_p50_ms": lore_p50,
        "lore_p95_ms": lore_p95,
        "echo_p50_ms": echo_p50,
        "echo_p95_ms": echo_p95,
        "overhead_p50_ms": lore_p50 - echo_p50,
        "overhead_p95_ms": lore_p95 - echo_p95,
        "shared_scope_turns": len(lore.sent.get(SHARED, [])),
        "stores": "PostgreSQL" if args.database_url else "SQLite",
        "loop_lateness_ms": loop,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"{figures['requests']:,} chat requests in {args.duration:.0f} s "
            f"({figures['requests_per_s']:.0f}/s), {figures['shared_scope_turns']:,} of them "
            f"in one shared scope; errors: {figures['errors']}; session problems: {len(problems)}"
        )
        print(
            f"latency per request under load: Lore p50 {lore_p50:.1f} ms, p95 {lore_p95:.1f} ms"
            f" | bare FastAPI echo p50 {echo_p50:.1f} ms, p95 {echo_p95:.1f} ms"
            f" | ratio p50 {lore_p50 / max(echo_p50, 1e-9):.1f}x"
        )
        print(
            f"one client alone: Lore p50 {alone_p50:.1f} ms, p95 {alone_p95:.1f} ms"
            f" | bare FastAPI echo p50 {bare_p50:.1f} ms, p95 {bare_p95:.1f} ms"
            f" | Lore's own overhead per request p50 {alone_p50 - bare_p50:.1f} ms,"
            f" p95 {alone_p95 - bare_p95:.1f} ms ({alone_p50 / max(bare_p50, 1e-9):.1f}x)"
        )
        print(
            f"under load, Lore's own overhead per request: p50 {lore_p50 - echo_p50:.1f} ms, "
            f"p95 {lore_p95 - echo_p95:.1f} ms"
        )
        print(
            f"stores in {figures['stores']}; the server's event loop woke late by p50"
            f" {loop['p50']:.1f} ms, p95 {loop['p95']:.1f} ms, max {loop['max']:.1f} ms"
        )
    for line in errors[:5] + problems[:10]:
        print(f"  {line}", file=sys.stderr)
    return 0 if not (errors or problems) else 1


if __name__ == "__main__":
    sys.exit(main())
