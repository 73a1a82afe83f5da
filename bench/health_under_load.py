"""How fast the gateway's `/health` answers while a maximum-size message is processed,
beside the same gateway idle, in the same run.

    python bench/health_under_load.py [--messages 3] [--idle 5] [--json]

A child process serves `lore serve`'s gateway (its uvicorn settings, extraction on, the
scripted provider answering at once, so what is timed is Lore's own work) on 127.0.0.1.
This process asks `/health` every 10 ms: first for `--idle` seconds with nothing else
happening (the baseline), then while it sends `--messages` messages of
`max_message_chars` characters (English, Chinese and Russian words) one after another,
each until its after-turn work (extraction, indexing, embedding, consolidation) is done.
Printed: `/health` latency p50, p95 and max for both phases, and how long each message
took with its after-turn work. The budget: under load, max below 200 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

TOKEN = "bench-token"
BUDGET_MS = 200.0


def serve(home: Path) -> None:
    """The child: Lore's gateway on a free port, until stdin closes."""
    import asyncio
    import socket

    from lore.channels.http import create_app
    from lore.channels.http.auth import Clients
    from lore.channels.http.server import GatewayServer, server_config
    from lore.config import load_config
    from lore.llm.base import ChatRequest
    from lore.llm.scripted import ScriptedProvider, Step
    from lore.runtime import build

    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "api.requests_per_minute": 0},
    )
    model = ScriptedProvider(context_window=400_000)

    def answer(request: ChatRequest) -> Step:
        model.requests.clear()
        if "<memories>" in str(request.messages[-1].get("content", "")):  # extraction
            return Step(text='[{"op": "add", "content": "User sent a long text", "kind": "fact"}]')
        return Step(text="Thanks, I read it all.", chunk_size=16)

    model.default = answer
    lore = build(config, provider=model)
    app = create_app(lore, clients=Clients(TOKEN, config), mcp=False)

    @app.get("/bench/idle")
    async def idle() -> dict[str, int]:
        return {"pending": lore.background.pending}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = GatewayServer(server_config(app, config.api), app.state.gateway.approvals)
    print(json.dumps({"port": sock.getsockname()[1], "chars": config.max_message_chars}))
    sys.stdout.flush()

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        await asyncio.to_thread(sys.stdin.read)
        server.should_exit = True
        await task
        await lore.aclose()

    asyncio.run(main())


def _words(chars: int) -> str:
    words = ["morning", "coffee", "Taipei", "花莲", "台北", "搬家", "жена", "Анна", "музыка"]
    text = " ".join(f"{words[i % len(words)]}{i}" for i in range(chars // 4 + 10))
    return text[:chars]


def _probe(url: str, stop: threading.Event, into: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        while not stop.is_set():
            began = time.perf_counter()
            http.get("/health").raise_for_status()
            into.append((time.perf_counter() - began) * 1000)
            time.sleep(0.01)


def _summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies) or [0.0]
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {"n": len(ordered), "p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=3, help="maximum-size messages to send")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of the idle baseline")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--serve", metavar="HOME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(Path(tmp) / "home")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        started = json.loads(child.stdout.readline())
        url = f"http://127.0.0.1:{started['port']}"
        try:
            figures = _run(url, int(started["chars"]), args)
        finally:
            child.stdin.close()
            child.wait(60)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        _print(figures)
    return 0 if figures["loaded"]["max"] < BUDGET_MS else 1


def _run(url: str, chars: int, args: argparse.Namespace) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=30) as http:
        http.get("/health").raise_for_status()
    idle: list[float] = []
    stop = threading.Event()
    probe = threading.Thread(target=_probe, args=(url, stop, idle))
    probe.start()
    time.sleep(args.idle)
    stop.set()
    probe.join()

    loaded: list[float] = []
    stop = threading.Event()
    probe = threading.Thread(target=_probe, args=(url, stop, loaded))
    probe.start()
    turns: list[float] = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as http:
        for number in range(args.messages):
            text = f"{number}: " + _words(chars - 3 - len(str(number)))
            began = time.perf_counter()
            body = {
                "model": "lore",
                "user": "bench",
                "messages": [{"role": "user", "content": text}],
            }
            http.post("/v1/chat/completions", json=body).raise_for_status()
            while http.get("/bench/idle").json()["pending"]:
                time.sleep(0.02)
            turns.append(time.perf_counter() - began)
            print(f"  message {number + 1}/{args.messages}: {turns[-1]:.1f} s", file=sys.stderr)
    stop.set()
    probe.join()
    return {
        "message_chars": chars,
        "idle": _summary(idle),
        "loaded": _summary(loaded),
        "seconds_per_message": statistics.mean(turns),
        "budget_ms": BUDGET_MS,
    }


def _print(figures: dict[str, Any]) -> None:
    idle, loaded = figures["idle"], figures["loaded"]
    print(f"/health latency while a {figures['message_chars']:,}-character message is processed")
    print(f"{'':10} {'probes':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, row in (("idle", idle), ("loaded", loaded)):
        print(f"{name:10} {row['n']:>7} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['max']:>8.1f}")
    ratio = loaded["p95"] / idle["p95"] if idle["p95"] else float("inf")
    verdict = "within" if loaded["max"] < BUDGET_MS else "OVER"
    print(
        f"loaded p95 is {ratio:.1f}x idle; max {loaded['max']:.0f} ms, {verdict} the "
        f"{BUDGET_MS:.0f} ms budget; {figures['seconds_per_message']:.1f} s per message "
        "with its after-turn work"
    )


if __name__ == "__main__":
    sys.exit(main())
