"""What Telegram's webhook mode costs, each figure beside a baseline measured in the same run.

    python bench/telegram_webhook.py [--calls 200] [--turns 50] [--json]

- a webhook call with the secret token, carrying one group message nobody addressed to
  Lore (secret check, parsing, the update recorded in the chat ledger, the message kept
  in its conversation) beside `GET /health` on the same gateway: what Telegram waits for
  before its 200;
- --turns messages mentioning the bot in one group, posted as Telegram would and
  answered through the fake Bot API (sendMessage, in order), one at a time from the
  update to the reply the fake receives, beside the same turns handed to the bus
  directly: what the channel adds to a conversation's turn.

The model is the scripted one (it answers at once), so the figures are Lore's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from tests.gateway_server import OWNER_TOKEN  # noqa: E402
from tests.telegram_server import BOT_USERNAME, FakeTelegram  # noqa: E402

from lore.channels.http import create_app  # noqa: E402
from lore.channels.http.auth import Clients  # noqa: E402
from lore.channels.telegram import TelegramChannel  # noqa: E402
from lore.channels.telegram_webhook import SECRET_HEADER, WEBHOOK_PATH  # noqa: E402
from lore.config import Config, TelegramConfig, load_config  # noqa: E402
from lore.events import Inbound  # noqa: E402
from lore.llm.base import ChatRequest  # noqa: E402
from lore.llm.scripted import ScriptedProvider, Step  # noqa: E402
from lore.runtime import Runtime, build  # noqa: E402

SECRET = "bench-Secret_token-0123456789"
FAMILY = {"id": -1001234567890, "type": "supergroup", "title": "Family"}
MOM = {"id": 222, "is_bot": False, "first_name": "Mom"}


@dataclass
class TelegramGateway:
    lore: Runtime
    channel: TelegramChannel
    url: str


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _config(home: Path) -> Config:
    return load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )


def _clock() -> Any:
    from lore.clock import SystemClock

    return SystemClock()


@asynccontextmanager
async def telegram_gateway(home: Path, fake: FakeTelegram) -> AsyncIterator[TelegramGateway]:
    """The real gateway app with Telegram in webhook mode, served by uvicorn on 127.0.0.1
    in this event loop (as `lore serve` runs it), the channel started (setWebhook done)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    settings = TelegramConfig(
        token="123:BENCH",
        base_url=fake.base_url,
        owner_ids=("111",),
        webhook_url=url + WEBHOOK_PATH,
        webhook_secret=SECRET,
    )
    model = ScriptedProvider()
    model.default = _echo
    lore = build(replace(_config(home), telegram=settings), provider=model, clock=_clock())
    channel = TelegramChannel(lore, settings)
    app = create_app(lore, clients=Clients(OWNER_TOKEN, lore.config), channels=[channel], mcp=False)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    running = asyncio.create_task(channel.run_forever())
    try:
        while not (server.started and channel.ready.is_set()):
            for task in (serving, running):
                if task.done():
                    task.result()
            await asyncio.sleep(0.01)
        yield TelegramGateway(lore, channel, url)
    finally:
        channel.stop()
        await asyncio.wait_for(running, timeout=30)
        server.should_exit = True
        await asyncio.wait_for(serving, timeout=30)
        sock.close()
        await lore.aclose()


def _update(fake: FakeTelegram, text: str) -> bytes:
    """Mom writes `text` in the family group; the update as Telegram posts it."""
    fake.say(text, chat=FAMILY, sender=MOM)
    return json.dumps(fake.updates[-1]).encode("utf-8")


HEADERS = {SECRET_HEADER: SECRET, "Content-Type": "application/json"}


async def _webhook_vs_health(home: Path, fake: FakeTelegram, calls: int) -> dict[str, float]:
    async with telegram_gateway(home, fake) as telegram:
        async with httpx.AsyncClient(base_url=telegram.url, timeout=30) as client:
            await client.get("/health")
            await client.post(WEBHOOK_PATH, content=_update(fake, "warm"), headers=HEADERS)
            await telegram.channel.drain()
            webhook, health = [], []
            for n in range(calls):
                body = _update(fake, f"note {n}")
                started = time.perf_counter()
                answer = await client.post(WEBHOOK_PATH, content=body, headers=HEADERS)
                webhook.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
                started = time.perf_counter()
                await client.get("/health")
                health.append(time.perf_counter() - started)
                await telegram.channel.drain()  # one call at a time: the figure is the call's own
        kept = telegram.lore.session(f"telegram:{FAMILY['id']}").messages
        assert len(kept) == calls + 1 and fake.sent == [], "every message kept, none answered"
    return {
        "webhook_p50_ms": _ms(webhook, 50),
        "webhook_p95_ms": _ms(webhook, 95),
        "health_p50_ms": _ms(health, 50),
        "health_p95_ms": _ms(health, 95),
    }


async def _through_telegram(home: Path, fake: FakeTelegram, turns: int) -> list[float]:
    async with telegram_gateway(home, fake) as telegram:
        before = len(fake.sent)
        timings = []
        async with httpx.AsyncClient(base_url=telegram.url, timeout=30) as client:
            for n in range(turns):
                body = _update(fake, f"@{BOT_USERNAME} question {n}")
                started = time.perf_counter()
                answer = await client.post(WEBHOOK_PATH, content=body, headers=HEADERS)
                await asyncio.to_thread(fake.wait_sent, before + n + 1, 60.0)
                timings.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
        replies = [sent["text"] for sent in fake.sent[before:]]
        assert len(replies) == turns, f"{len(replies)} replies to {turns} turns"
        for n, reply in enumerate(replies):
            assert reply.endswith(f"question {n}"), f"reply {n} out of order: {reply!r}"
    return timings


async def _through_bus(home: Path, turns: int) -> list[float]:
    model = ScriptedProvider()
    model.default = _echo
    lore = build(_config(home), provider=model, clock=_clock())
    timings = []
    for n in range(turns):
        inbound = Inbound(f"telegram:{FAMILY['id']}", "telegram", "Mom", f"question {n}", "member")
        started = time.perf_counter()
        await lore.bus.send(inbound)
        timings.append(time.perf_counter() - started)
    await lore.aclose()
    return timings


def _ms(timings: list[float], percent: int) -> float:
    """The `percent`th percentile of `timings`, in milliseconds."""
    if len(timings) < 2:
        return timings[0] * 1000
    return statistics.quantiles(timings, n=100, method="inclusive")[percent - 1] * 1000


async def _main(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeTelegram() as fake:
        root = Path(tmp)
        figures = await _webhook_vs_health(root / "a", fake, args.calls)
        telegram = await _through_telegram(root / "b", fake, args.turns)
        bus = await _through_bus(root / "c", args.turns)
    figures |= {
        "telegram_turn_p50_ms": _ms(telegram, 50),
        "telegram_turn_p95_ms": _ms(telegram, 95),
        "bus_turn_p50_ms": _ms(bus, 50),
        "bus_turn_p95_ms": _ms(bus, 95),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.calls < 1 or args.turns < 1:
        parser.error("--calls and --turns must be at least 1")
    figures = asyncio.run(_main(args))
    if args.json:
        print(json.dumps(figures))
        return
    webhook, health = figures["webhook_p50_ms"], figures["health_p50_ms"]
    webhook95, health95 = figures["webhook_p95_ms"], figures["health_p95_ms"]
    telegram, bus = figures["telegram_turn_p50_ms"], figures["bus_turn_p50_ms"]
    telegram95, bus95 = figures["telegram_turn_p95_ms"], figures["bus_turn_p95_ms"]
    print(
        f"webhook call, one unaddressed group message: p50 {webhook:.2f} ms, p95 {webhook95:.2f} ms"
    )
    print(
        f"  baseline GET /health on the same gateway: p50 {health:.2f} ms, p95 {health95:.2f} ms "
        f"({webhook / health:.1f}x, {webhook95 / health95:.1f}x)"
    )
    print(
        "addressed group turn through Telegram (update to sendMessage): "
        f"p50 {telegram:.2f} ms, p95 {telegram95:.2f} ms"
    )
    print(
        f"  baseline: the same turn handed to the bus: p50 {bus:.2f} ms, p95 {bus95:.2f} ms "
        f"({telegram / bus:.1f}x, {telegram95 / bus95:.1f}x)"
    )


if __name__ == "__main__":
    main()
