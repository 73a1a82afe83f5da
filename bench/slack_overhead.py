"""What the Slack channel costs, each figure beside a baseline measured in the same run.

    python bench/slack_overhead.py [--calls 200] [--turns 50] [--json]

- a signed Events API call carrying one channel message nobody addressed to Lore
  (signature check, parsing, recording, the message kept in its conversation) beside
  `GET /health` on the same gateway: what Slack waits for before its 200;
- --turns mentions in one channel, arriving over the Socket Mode websocket and answered
  through the fake Web API (chat.postMessage, in order), and the same over the Events
  API, beside the same turns handed to the bus directly: what the channel adds.

The model is the scripted one (it answers at once), so the figures are Lore's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from tests.slack_server import BOT_USER, FakeSlack, slack_lore, slack_settings  # noqa: E402

from lore.config import Config, load_config  # noqa: E402
from lore.events import Inbound  # noqa: E402
from lore.llm.base import ChatRequest  # noqa: E402
from lore.llm.scripted import ScriptedProvider, Step  # noqa: E402
from lore.runtime import build  # noqa: E402

CHANNEL = "C0BENCH001"
MOM = "U0MOM0001"


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _config(home: Path, fake: FakeSlack) -> Config:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )
    return replace(config, slack=slack_settings(fake))


def _clock() -> Any:
    from lore.clock import SystemClock

    return SystemClock()


async def _events_vs_health(home: Path, fake: FakeSlack, calls: int) -> dict[str, float]:
    model = ScriptedProvider()
    model.default = _echo
    async with slack_lore(_config(home, fake), model, _clock(), fake) as slack:
        async with httpx.AsyncClient(base_url=slack.url, timeout=30) as client:
            await client.get("/health")
            await slack.post(slack.events.message("warm", user=MOM, channel=CHANNEL))
            events, health = [], []
            for n in range(calls):
                envelope = slack.events.message(f"note {n}", user=MOM, channel=CHANNEL)
                started = time.perf_counter()
                answer = await slack.post(envelope)
                events.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
                started = time.perf_counter()
                await client.get("/health")
                health.append(time.perf_counter() - started)
        await slack.channel.drain()
    return {
        "events_p50_ms": statistics.median(events) * 1000,
        "health_p50_ms": statistics.median(health) * 1000,
    }


async def _turns(home: Path, fake: FakeSlack, turns: int, *, socket: bool) -> float:
    model = ScriptedProvider()
    model.default = _echo
    async with slack_lore(_config(home, fake), model, _clock(), fake) as slack:
        before = len(fake.sent)
        started = time.perf_counter()
        for n in range(turns):
            text = f"<@{BOT_USER}> question {n}"
            await slack.say(text, user=MOM, channel=CHANNEL, mention=True, socket=socket)
        await asyncio.to_thread(fake.wait_sent, before + turns, 120.0)
        return (time.perf_counter() - started) / turns * 1000


async def _bus(home: Path, fake: FakeSlack, turns: int) -> float:
    model = ScriptedProvider()
    model.default = _echo
    lore = build(_config(home, fake), provider=model, clock=_clock())
    started = time.perf_counter()
    for n in range(turns):
        await lore.bus.send(Inbound(f"slack:{CHANNEL}", "slack", "Mom", f"question {n}", "member"))
    elapsed = (time.perf_counter() - started) / turns * 1000
    await lore.aclose()
    return elapsed


async def _main(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeSlack() as fake:
        fake.users[MOM] = "Mom"
        root = Path(tmp)
        figures = await _events_vs_health(root / "a", fake, args.calls)
        figures["socket_turn_ms"] = await _turns(root / "b", fake, args.turns, socket=True)
        figures["events_turn_ms"] = await _turns(root / "c", fake, args.turns, socket=False)
        figures["bus_turn_ms"] = await _bus(root / "d", fake, args.turns)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(_main(args))
    if args.json:
        print(json.dumps(figures))
        return
    events, health = figures["events_p50_ms"], figures["health_p50_ms"]
    socket, posted, bus = (
        figures["socket_turn_ms"],
        figures["events_turn_ms"],
        figures["bus_turn_ms"],
    )
    print(f"Events API call, one unaddressed channel message: p50 {events:.2f} ms")
    print(
        f"  baseline GET /health on the same gateway: p50 {health:.2f} ms ({events / health:.1f}x)"
    )
    print(f"mentioned turn over Socket Mode (event to reply):  {socket:.2f} ms per turn")
    print(f"mentioned turn over the Events API:                {posted:.2f} ms per turn")
    print(f"  baseline: the same turn handed to the bus: {bus:.2f} ms per turn")
    print(f"  ratios: Socket Mode {socket / bus:.1f}x, Events API {posted / bus:.1f}x")


if __name__ == "__main__":
    main()
