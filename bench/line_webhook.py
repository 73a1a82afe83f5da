"""What the LINE channel costs, each figure beside a baseline measured in the same run.

    python bench/line_webhook.py [--calls 300] [--turns 100] [--json]

- a signed webhook call carrying one group message nobody addressed to Lore (signature
  check, parsing, the message recorded in its conversation) beside `GET /health` on the
  same gateway: what LINE waits for before its 200;
- --turns addressed messages in one group, posted as LINE would and answered through the
  fake Messaging API (reply token, in order), beside the same turns handed to the bus
  directly: what the channel adds to a conversation's turn.

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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from tests.line_server import (  # noqa: E402
    FakeLine,
    Webhooks,
    line_gateway,
    line_settings,
    sign,
)

from lore.config import Config, load_config, with_overrides  # noqa: E402
from lore.events import Inbound  # noqa: E402
from lore.llm.base import ChatRequest  # noqa: E402
from lore.llm.scripted import ScriptedProvider, Step  # noqa: E402
from lore.runtime import build  # noqa: E402

GROUP = "C0000000000000000000000000000b3nc"
MOM = "U2222222222222222222222222222222b"


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _config(home: Path, fake: FakeLine) -> Config:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )
    return with_overrides(config, line=line_settings(fake))


async def _webhook_vs_health(home: Path, fake: FakeLine, calls: int) -> dict[str, float]:
    model = ScriptedProvider()
    model.default = _echo
    async with line_gateway(_config(home, fake), model, _clock(), fake) as line:
        async with httpx.AsyncClient(base_url=line.url, timeout=30) as client:
            webhook, health = [], []
            for n in range(calls):
                body = Webhooks.body(line.hooks.text(f"note {n}", user=MOM, group=GROUP))
                headers = {"X-Line-Signature": sign(body)}
                started = time.perf_counter()
                answer = await client.post("/line/webhook", content=body, headers=headers)
                webhook.append(time.perf_counter() - started)
                assert answer.status_code == 200
                started = time.perf_counter()
                await client.get("/health")
                health.append(time.perf_counter() - started)
            await line.channel.drain()
            # The same work without HTTP: check the signature, parse, record.
            direct, recording = [], []
            for n in range(calls):
                body = Webhooks.body(line.hooks.text(f"more {n}", user=MOM, group=GROUP))
                signature = sign(body)
                started = time.perf_counter()
                await line.channel.handle(line.channel.parse(body, signature))
                await line.channel.drain()
                direct.append(time.perf_counter() - started)
                quiet = Inbound(
                    f"line:group:{GROUP}", "line", "Mom", f"more {n}", "member", respond=False
                )
                started = time.perf_counter()
                await line.lore.bus.send(quiet)
                recording.append(time.perf_counter() - started)
    return {
        "webhook_p50_ms": statistics.median(webhook) * 1000,
        "health_p50_ms": statistics.median(health) * 1000,
        "handled_p50_ms": statistics.median(direct) * 1000,
        "recorded_p50_ms": statistics.median(recording) * 1000,
    }


async def _turns_vs_bus(home: Path, fake: FakeLine, turns: int) -> dict[str, float]:
    model = ScriptedProvider()
    model.default = _echo
    async with line_gateway(_config(home / "line", fake), model, _clock(), fake) as line:
        before = len(fake.sent)
        started = time.perf_counter()
        async with httpx.AsyncClient(base_url=line.url, timeout=30) as client:
            for n in range(turns):
                event = line.hooks.text(
                    f"@Lore question {n}", user=MOM, group=GROUP, mention_bot=True
                )
                body = Webhooks.body(event)
                await client.post(
                    "/line/webhook", content=body, headers={"X-Line-Signature": sign(body)}
                )
        await asyncio.to_thread(fake.wait_sent, before + turns, 120.0)
        through_line = time.perf_counter() - started
    lore = build(_config(home / "bus", fake), provider=model, clock=_clock())
    started = time.perf_counter()
    for n in range(turns):
        inbound = Inbound(f"line:group:{GROUP}", "line", "Mom", f"question {n}", "member")
        await lore.bus.send(inbound)
    direct = time.perf_counter() - started
    await lore.aclose()
    return {
        "line_turn_ms": through_line / turns * 1000,
        "bus_turn_ms": direct / turns * 1000,
    }


def _clock() -> Any:
    from lore.clock import SystemClock

    return SystemClock()


async def _main(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeLine() as fake:
        fake.profiles[MOM] = "Mom"
        figures = await _webhook_vs_health(Path(tmp) / "a", fake, args.calls)
        figures |= await _turns_vs_bus(Path(tmp) / "b", fake, args.turns)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(_main(args))
    if args.json:
        print(json.dumps(figures))
        return
    webhook, health = figures["webhook_p50_ms"], figures["health_p50_ms"]
    handled, recorded = figures["handled_p50_ms"], figures["recorded_p50_ms"]
    line, bus = figures["line_turn_ms"], figures["bus_turn_ms"]
    print(f"webhook call, one unaddressed group message: p50 {webhook:.2f} ms")
    print(
        f"  baseline GET /health on the same gateway: p50 {health:.2f} ms ({webhook / health:.1f}x)"
    )
    print(f"the same message without HTTP (check, parse, record): p50 {handled:.2f} ms")
    print(
        f"  baseline: the message handed to the bus to record: p50 {recorded:.2f} ms "
        f"({handled / recorded:.1f}x)"
    )
    print(f"addressed group turn through LINE (webhook to reply): {line:.2f} ms per turn")
    print(f"  baseline: the same turn handed to the bus:          {bus:.2f} ms ({line / bus:.1f}x)")


if __name__ == "__main__":
    main()
