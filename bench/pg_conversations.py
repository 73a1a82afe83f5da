"""Many conversations over HTTP across `lore serve` workers on one PostgreSQL and one home.

    .venv/bin/python bench/pg_conversations.py [--workers 4] [--conversations 400]
                                               [--pairs 20] [--duration 60]
                                               [--url postgresql://...] [--json]

Starts the embedded PostgreSQL of the tests (or uses --url, an empty database) and
--workers processes, each `lore serve`'s own `serve()` on its own port over the same
Lore home, with a scripted model that answers "re: " + the message at once (what is
timed is Lore's work). This process is the load balancer and the clients: one client per
conversation sends numbered messages one after another for --duration seconds, each to
the next worker in turn (no two turns of a conversation in a row on the same worker),
and --pairs conversations get a second client at the same time (two people in one
group), whose turns must then be serialised across workers.

Afterwards each conversation is read back through the runtime's session store (files
today, or wherever the sessions live): every message sent is there once (lost,
duplicated), each client's messages are in the order it sent them (reordered), and every
user message is followed by its own reply (interleaved: two turns ran at once).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.postgres_server


def worker(home: str, url: str, port_file: str) -> None:
    """`lore serve` with a model that echoes; writes its port to `port_file`."""
    from lore.cli.serve import serve
    from lore.config import load_config
    from lore.llm.base import ChatRequest
    from lore.llm.scripted import ScriptedProvider, Step
    from lore.runtime import build

    env = {"LORE_HOME": home, "LORE_DATABASE_URL": url, "LORE_TIMEZONE": "UTC", "USER": "bench"}
    flags = {"model": "scripted", "extraction.enabled": False}
    model = ScriptedProvider(context_window=128_000)

    def echo(request: ChatRequest) -> Step:
        model.requests.clear()  # the scripted provider keeps every request; not here
        users = [m for m in request.messages if m.get("role") == "user"]
        return Step(text=f"re: {users[-1].get('content', '') if users else ''}")

    model.default = echo
    lore = build(load_config(env=env, flags=flags), provider=model)
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
    written = Path(f"{port_file}.new")
    written.write_text(str(listener.getsockname()[1]))
    written.rename(port_file)  # whole, or not yet there
    asyncio.run(serve(lore, listener=listener))


KINDS = ("lost", "duplicated", "reordered", "interleaved", "interleaved_pairs")


@dataclass
class Load:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


async def client(
    urls: list[str], token: str, name: str, scope: str, offset: int, deadline: float, load: Load
) -> None:
    headers = {"Authorization": f"Bearer {token}", "X-Lore-Session": scope}
    # A new connection per turn: a kept-alive one to a worker this client last used
    # seconds ago can be closed by the server just as it is reused (a client-side race).
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, headers=headers, limits=fresh) as http:
        number = 0
        while time.perf_counter() < deadline:
            number += 1
            text = f"{name} #{number} 你好 привет"
            url = urls[(offset + number) % len(urls)]
            body = {"model": "lore", "messages": [{"role": "user", "content": text}]}
            began = time.perf_counter()
            try:
                reply = await http.post(f"{url}/v1/chat/completions", json=body)
                if reply.status_code != 200:
                    raise RuntimeError(f"HTTP {reply.status_code}: {reply.text[:200]}")
                answer = reply.json()["choices"][0]["message"]["content"]
                if answer != f"re: {text}":
                    raise RuntimeError(f"wrong reply {answer!r} to {text!r}")
            except Exception as exc:  # every failure counts; the run goes on
                load.errors.append(f"{scope}: {type(exc).__name__}: {exc}"[:300])
                continue
            load.latencies.append((time.perf_counter() - began) * 1000)
            load.sent[scope].append(text)


async def drive(urls: list[str], token: str, args: argparse.Namespace) -> Load:
    load = Load()
    deadline = time.perf_counter() + args.duration
    tasks = []
    for n in range(args.conversations):
        scope = f"api:conversation-{n}"
        tasks.append(client(urls, token, f"c{n}a", scope, n, deadline, load))
        if n < args.pairs:
            tasks.append(client(urls, token, f"c{n}b", scope, n + 1, deadline, load))
    await asyncio.gather(*tasks)
    return load


def check(lore: Any, load: Load, pairs: int) -> Counter[str]:
    """Lost, duplicated, reordered and interleaved messages, counted per kind (interleaved
    apart for the conversations with two clients: only they can run two turns at once)."""
    problems: Counter[str] = Counter()
    paired = {f"api:conversation-{n}" for n in range(pairs)}
    for scope, sent in load.sent.items():
        messages = lore.sessions.live(scope).messages
        users = [str(m["content"]) for m in messages if m["role"] == "user"]
        kept = Counter(users)
        problems["lost"] += sum(1 for text in sent if kept[text] == 0)
        problems["duplicated"] += sum(c - 1 for c in kept.values() if c > 1)
        by_client: dict[str, list[int]] = defaultdict(list)
        for text in users:
            who, number = text.split()[:2]
            by_client[who].append(int(number.lstrip("#")))
        problems["reordered"] += sum(
            1 for numbers in by_client.values() if numbers != sorted(numbers)
        )
        for i, message in enumerate(messages):
            if message["role"] == "user":
                after = messages[i + 1] if i + 1 < len(messages) else {}
                if after.get("content") != f"re: {message['content']}":
                    problems["interleaved_pairs" if scope in paired else "interleaved"] += 1
    return problems


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--conversations", type=int, default=400)
    parser.add_argument("--pairs", type=int, default=20, help="conversations with two clients")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--url", default="", help="an empty PostgreSQL database to use")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from lore.channels.http.auth import ensure_token
    from lore.config import load_config
    from lore.runtime import build

    server = None
    url = args.url
    if not url:
        from tests.postgres_server import EmbeddedPostgres

        server = EmbeddedPostgres().start()
        url = server.create_database()
    children: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="lore-pg-conversations-") as home:
            env = {"LORE_HOME": home, "LORE_DATABASE_URL": url, "LORE_TIMEZONE": "UTC"}
            lore = build(load_config(env=env, flags={"model": "scripted"}))
            token = ensure_token(lore.config)  # before the workers, so they share it
            ports = [Path(home) / f"port-{n}" for n in range(args.workers)]
            for n, port in enumerate(ports):
                log = open(Path(home) / f"worker-{n}.log", "wb")  # noqa: SIM115
                command = [sys.executable, __file__, "--worker", home, url, str(port)]
                children.append(subprocess.Popen(command, stdout=log, stderr=log, cwd=ROOT))
            urls = [f"http://127.0.0.1:{_wait_for(port)}" for port in ports]
            time.sleep(2)  # the gateways start listening after the port is known
            load = asyncio.run(drive(urls, token, args))
            _stop(children)
            problems = check(lore, load, args.pairs)
            lore.close()
    finally:
        _stop(children)
        if server is not None:
            server.stop()
    ordered = sorted(load.latencies) or [0.0]
    figures = {
        "workers": args.workers,
        "conversations": args.conversations,
        "pairs": args.pairs,
        "turns": len(load.latencies),
        "turns_per_s": len(load.latencies) / args.duration,
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "errors": len(load.errors),
        **{kind: problems[kind] for kind in KINDS},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"{args.conversations} conversations ({args.pairs} with two clients) over"
            f" {args.workers} workers for {args.duration:.0f} s: {figures['turns']:,} turns"
            f" ({figures['turns_per_s']:.0f}/s), p50 {figures['p50_ms']:.0f} ms,"
            f" p95 {figures['p95_ms']:.0f} ms, {figures['errors']} errors"
        )
        print(
            f"session messages: {problems['lost']} lost, {problems['duplicated']} duplicated,"
            f" {problems['reordered']} reordered; replies not right after their message:"
            f" {problems['interleaved']} with one client, {problems['interleaved_pairs']} with two"
        )
    for line in load.errors[:5]:
        print(f"  {line}", file=sys.stderr)
    return 1 if load.errors or sum(problems.values()) else 0


def _wait_for(port_file: Path) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text():
            return int(port_file.read_text())
        time.sleep(0.1)
    raise RuntimeError(f"a worker did not start (see {port_file.parent}/worker-*.log)")


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    os.sync()


if __name__ == "__main__":
    sys.exit(main())
