"""What the WhatsApp channel costs, each figure beside a baseline measured in the same run.

    python bench/whatsapp_webhook.py [--calls 200] [--turns 50] [--json]

- a signed webhook call carrying one message (signature check, parsing, the message
  recorded in the chat ledger) beside `GET /health` on the same gateway: what Meta waits
  for before its 200;
- --turns messages from one person, posted as Meta would and answered through the fake
  Graph API, in order, beside the same turns handed to the bus directly: what the
  channel adds to a conversation's turn.

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
from tests.whatsapp_server import (  # noqa: E402
    FakeGraph,
    Notifications,
    sign,
    whatsapp_gateway,
    whatsapp_settings,
)

from lore.config import Config, load_config, with_overrides  # noqa: E402
from lore.events import Inbound  # noqa: E402
from lore.llm.base import ChatRequest  # noqa: E402
from lore.llm.scripted import ScriptedProvider, Step  # noqa: E402
from lore.runtime import build  # noqa: E402

AMY = "886912345678"


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _config(home: Path, fake: FakeGraph) -> Config:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )
    return with_overrides(config, whatsapp=whatsapp_settings(fake, allow=(AMY,)))


def _signed(text: str) -> tuple[bytes, dict[str, str]]:
    body = Notifications.encode(Notifications.text(text, wa_id=AMY, name="Amy"))
    return body, {"X-Hub-Signature-256": sign(body), "Content-Type": "application/json"}


async def _webhook_vs_health(home: Path, fake: FakeGraph, calls: int) -> dict[str, float]:
    model = ScriptedProvider()
    model.default = _echo
    async with whatsapp_gateway(_config(home, fake), model, _clock(), fake) as wa:
        async with httpx.AsyncClient(base_url=wa.url, timeout=30) as client:
            webhook, health = [], []
            for n in range(calls):
                body, headers = _signed(f"note {n}")
                started = time.perf_counter()
                answer = await client.post("/whatsapp/webhook", content=body, headers=headers)
                webhook.append(time.perf_counter() - started)
                assert answer.status_code == 200
                started = time.perf_counter()
                await client.get("/health")
                health.append(time.perf_counter() - started)
                await wa.channel.drain()  # one call at a time: the figure is the call's own
    return {
        "webhook_p50_ms": statistics.median(webhook) * 1000,
        "health_p50_ms": statistics.median(health) * 1000,
    }


async def _turns_vs_bus(home: Path, fake: FakeGraph, turns: int) -> dict[str, float]:
    model = ScriptedProvider()
    model.default = _echo
    async with whatsapp_gateway(_config(home / "wa", fake), model, _clock(), fake) as wa:
        before = len(fake.sent)
        started = time.perf_counter()
        async with httpx.AsyncClient(base_url=wa.url, timeout=30) as client:
            for n in range(turns):
                body, headers = _signed(f"question {n}")
                await client.post("/whatsapp/webhook", content=body, headers=headers)
        await asyncio.to_thread(fake.wait_sent, before + turns, 120.0)
        through_whatsapp = time.perf_counter() - started
    lore = build(_config(home / "bus", fake), provider=model, clock=_clock())
    started = time.perf_counter()
    for n in range(turns):
        await lore.bus.send(Inbound(f"whatsapp:{AMY}", "whatsapp", "Amy", f"q {n}", "guest"))
    direct = time.perf_counter() - started
    await lore.aclose()
    return {
        "whatsapp_turn_ms": through_whatsapp / turns * 1000,
        "bus_turn_ms": direct / turns * 1000,
    }


def _clock() -> Any:
    from lore.clock import SystemClock

    return SystemClock()


async def _main(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeGraph() as fake:
        figures = await _webhook_vs_health(Path(tmp) / "a", fake, args.calls)
        figures |= await _turns_vs_bus(Path(tmp) / "b", fake, args.turns)
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
    webhook, health = figures["webhook_p50_ms"], figures["health_p50_ms"]
    through, bus = figures["whatsapp_turn_ms"], figures["bus_turn_ms"]
    print(f"signed webhook call, one message recorded: p50 {webhook:.2f} ms")
    print(
        f"  baseline GET /health on the same gateway: p50 {health:.2f} ms ({webhook / health:.1f}x)"
    )
    print(f"turn through WhatsApp (webhook to Graph reply): {through:.2f} ms per turn")
    print(f"  baseline: the same turn handed to the bus:    {bus:.2f} ms ({through / bus:.1f}x)")


if __name__ == "__main__":
    main()
