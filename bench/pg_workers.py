"""Reminders across `lore serve` workers on one PostgreSQL, one of them killed midway.

    .venv/bin/python bench/pg_workers.py [--workers 4] [--reminders 10000] [--window 60]
                                         [--scopes 500] [--lead 15] [--lease 60]
                                         [--send-ms 2] [--url postgresql://...]
                                         [--no-baseline] [--json]

Starts the embedded PostgreSQL of the tests (or uses --url, an empty database), adds
--reminders reminders over --scopes conversations, due evenly over --window seconds from
--lead seconds on, then starts --workers processes on one Lore home, each running `lore
serve`'s own `serve()` (gateway, scheduler, idle close, Dream, embedding) with one extra
channel: scopes `bench:` are delivered by an HTTP POST, carrying the occurrence's
idempotency key, to a sink in this process that records every request and the moment
it came, then answers after --send-ms (a chat API's round trip: workers spend their
time mid-delivery, where a kill hurts most). Halfway through the window the busiest
worker is killed with SIGKILL.

When every key has reached the sink (or the lease and a margin have run out), it prints
what the sink received (keys never received: misses; keys received twice: sent again
after the kill, which the key lets a channel drop), what the conversations hold (each
reminder is written into its live session once, by key), what the outbox says (all
delivered, by whom), and delivery latency after the due time (p50, p95, max). The
baseline, measured in the same run, is the same load through one worker on SQLite with
no kill.
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
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.postgres_server

CHANNEL = "bench"  # its scopes are bench:<n>
PREFIX = f"{CHANNEL}:"


# -- the worker (a child process) -----------------------------------------------------------


def worker(home: str, url: str, sink: str, lease: float) -> None:
    """`lore serve` with a channel for `bench:` scopes that POSTs each delivery to `sink`."""
    import httpx

    from lore.cli.serve import serve
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.reminders.delivery import Delivery
    from lore.runtime import build

    env = {"LORE_HOME": home, "LORE_DATABASE_URL": url, "LORE_TIMEZONE": "UTC", "USER": "bench"}
    flags = {
        "model": "scripted",
        "extraction.enabled": False,
        "reminders.poll_seconds": 5.0,
        "reminders.lease_seconds": lease,
    }
    lore = build(load_config(env=env, flags=flags), provider=ScriptedProvider())
    listener = socket.create_server(("127.0.0.1", 0))

    async def main() -> None:
        async with httpx.AsyncClient(timeout=10) as client:

            async def to_sink(due: Delivery) -> None:
                body = {"key": due.key, "id": due.id, "due_at": due.due_at.isoformat()}
                body["worker"] = os.getpid()
                reply = await client.post(sink, json=body, headers={"Idempotency-Key": due.key})
                reply.raise_for_status()

            with lore.bus.deliver_for(CHANNEL, to_sink):
                await serve(lore, listener=listener)

    asyncio.run(main())


# -- the sink -------------------------------------------------------------------------------


@dataclass
class Sink:
    """Every delivery POSTed to it: (key, reminder id, due at, received at, worker pid)."""

    send_seconds: float = 0.0
    received: list[tuple[str, int, float, float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keys(self) -> set[str]:
        with self.lock:
            return {r[0] for r in self.received}

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server protocol)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                at = time.time()
                due = datetime.fromisoformat(body["due_at"]).timestamp()
                with sink.lock:
                    sink.received.append((body["key"], body["id"], due, at, body["worker"]))
                time.sleep(sink.send_seconds)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}/deliver"


# -- one run ----------------------------------------------------------------------------------


@dataclass
class Result:
    label: str
    workers: int
    reminders: int
    window: float
    received: int = 0
    distinct: int = 0
    sent_twice: int = 0
    misses: int = 0
    in_sessions: int = 0
    session_duplicates: int = 0
    outbox_delivered: int = 0
    by_worker: dict[str, int] = field(default_factory=dict)
    killed: str = ""
    delivered_before_kill: int = 0
    latency: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


def run(args: argparse.Namespace, url: str, workers: int, kill: bool, label: str) -> Result:
    from lore.config import load_config
    from lore.runtime import build

    result = Result(label, workers, args.reminders, args.window)
    sink = Sink(args.send_ms / 1000)
    server, sink_url = sink.serve()
    with tempfile.TemporaryDirectory(prefix="lore-pg-workers-") as home:
        env = {"LORE_HOME": home, "LORE_DATABASE_URL": url, "LORE_TIMEZONE": "UTC"}
        lore = build(load_config(env=env, flags={"model": "scripted"}))
        start = datetime.now(UTC) + timedelta(seconds=args.lead)
        keys = add_reminders(lore, args, start)
        children = [spawn(home, url, sink_url, args.lease, n) for n in range(workers)]
        began = time.monotonic()
        # Just after a due second begins, when the workers are busiest delivering it.
        middle = int(start.timestamp() + args.window / 2) + 0.05
        # Time for all of them even when the workers fall behind: a miss is a reminder
        # never delivered, not one delivered late.
        work = args.reminders * (args.send_ms / 1000 + 0.02) / workers
        deadline = start.timestamp() + max(args.window, work) + args.lease + 30
        try:
            while time.time() < deadline and len(sink.keys()) < len(keys):
                if kill and not result.killed and time.time() >= middle:
                    victim = busiest(sink, children)
                    os.kill(victim.pid, signal.SIGKILL)
                    result.killed = str(victim.pid)
                    result.delivered_before_kill = len(sink.keys())
                wait = 0.2 if result.killed or not kill else middle - time.time()
                time.sleep(min(0.2, max(0.005, wait)))
        finally:
            result.seconds = time.monotonic() - began
            stop(children)
            server.shutdown()
        count(result, sink, keys)
        count_conversations(result, lore, args)
        lore.close()
    return result


def add_reminders(lore: Any, args: argparse.Namespace, start: datetime) -> set[str]:
    """The reminders, due evenly over the window; returns their idempotency keys' ids."""
    now = datetime.now(UTC)
    ids = set()
    store = lore.reminders
    database = lore.postgres.db if lore.postgres is not None else lore.db
    with database.atomic():  # one transaction: seconds, not a minute
        for n in range(args.reminders):
            due = start + timedelta(seconds=args.window * n / args.reminders)
            scope = f"{PREFIX}{n % args.scopes}"
            reminder = store.add(scope, "john", f"reminder {n}", due, timezone="UTC", now=now)
            ids.add(str(reminder.id))
    return ids


def spawn(home: str, url: str, sink: str, lease: float, n: int) -> subprocess.Popen[bytes]:
    log = open(Path(home) / f"worker-{n}.log", "wb")  # noqa: SIM115 (the child owns it)
    command = [sys.executable, __file__, "--worker", home, url, sink, str(lease)]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def busiest(sink: Sink, children: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """The worker that has delivered most so far: the one most likely mid-delivery."""
    with sink.lock:
        done = Counter(r[4] for r in sink.received)
    return max(children, key=lambda child: done[child.pid])


def stop(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def count(result: Result, sink: Sink, ids: set[str]) -> None:
    first: dict[int, tuple[float, float]] = {}
    for _key, reminder_id, due, at, _worker in sink.received:
        if reminder_id not in first or at < first[reminder_id][1]:
            first[reminder_id] = (due, at)
    keys = Counter(r[0] for r in sink.received)
    result.received = len(sink.received)
    result.distinct = len(keys)
    result.sent_twice = sum(1 for c in keys.values() if c > 1)
    result.misses = len(ids - {str(i) for i in first})
    workers = Counter(str(r[4]) for r in sink.received)
    result.by_worker = dict(sorted(workers.items()))
    lateness = sorted(at - due for due, at in first.values())
    if lateness:
        result.latency = {
            "p50": statistics.median(lateness),
            "p95": lateness[max(0, int(len(lateness) * 0.95) - 1)],
            "max": lateness[-1],
        }


def count_conversations(result: Result, lore: Any, args: argparse.Namespace) -> None:
    """Reminder messages in the live sessions (by delivery key) and delivered outbox rows."""
    seen: Counter[str] = Counter()
    for n in range(args.scopes):
        scope = f"{PREFIX}{n}"
        for message in lore.sessions.live(scope).messages:
            if message.get("delivery"):
                seen[str(message["delivery"])] += 1
        delivered = lore.outbox.items(scope, status="delivered", limit=args.reminders)
        result.outbox_delivered += len(delivered)
    result.in_sessions = len(seen)
    result.session_duplicates = sum(c - 1 for c in seen.values())


# -- report -----------------------------------------------------------------------------------


def render(results: list[Result]) -> str:
    lines = []
    for r in results:
        late = r.latency
        kill = (
            f"; worker {r.killed} killed (SIGKILL) after {r.delivered_before_kill:,} deliveries"
            if r.killed
            else ""
        )
        lines += [
            f"{r.label}: {r.workers} worker(s), {r.reminders:,} reminders due within"
            f" {r.window:.0f} s{kill}",
            f"  channel: {r.distinct:,} delivered, {r.misses} missed, {r.sent_twice} sent twice"
            f" (dropped by their idempotency key), {r.received:,} requests",
            f"  conversations: {r.in_sessions:,} reminders written, {r.session_duplicates}"
            f" duplicates; outbox: {r.outbox_delivered:,} delivered",
            f"  per worker: {', '.join(f'{k}: {v:,}' for k, v in r.by_worker.items())}",
            f"  latency after due: p50 {late.get('p50', 0):.2f} s  p95 {late.get('p95', 0):.2f} s"
            f"  max {late.get('max', 0):.2f} s   ({r.seconds:.0f} s in all)",
        ]
    if len(results) == 2:
        pg, lite = results
        ratio = pg.latency.get("p95", 0) / max(lite.latency.get("p95", 0), 1e-3)
        lines.append(f"p95 latency, PostgreSQL workers / SQLite single worker: {ratio:.1f}x")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--reminders", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=60.0, help="seconds they fall due in")
    parser.add_argument("--scopes", type=int, default=500)
    parser.add_argument("--lead", type=float, default=15.0, help="seconds until the first")
    parser.add_argument("--lease", type=float, default=60.0, help="reminders.lease_seconds")
    parser.add_argument("--send-ms", type=float, default=2.0, help="the sink's answer time")
    parser.add_argument("--url", default="", help="an empty PostgreSQL database to use")
    parser.add_argument("--no-baseline", action="store_true", help="skip the SQLite run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from lore import text

    text.warm_up()
    server = None
    url = args.url
    if not url:
        from tests.postgres_server import EmbeddedPostgres

        server = EmbeddedPostgres().start()
        url = server.create_database()
    try:
        results = [run(args, url, args.workers, True, "PostgreSQL")]
    finally:
        if server is not None:
            server.stop()
    if not args.no_baseline:
        results.append(run(args, "", 1, False, "SQLite"))
    print(json.dumps([vars(r) for r in results], indent=2) if args.json else render(results))
    bad = (
        results[0].misses
        or results[0].session_duplicates
        or results[0].outbox_delivered < (results[0].reminders)
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
