"""What the Discord channel adds to a turn, beside the bus called directly, in one run.

    python bench/discord_overhead.py [--turns 50] [--json]

--turns addressed messages in one server channel, each sent as a MESSAGE_CREATE on the
fake Discord's gateway and timed until the reply reaches its REST API (one at a time,
so each figure is one message's latency through the real discord.py client), beside the
same turns handed to the bus directly. The model is the scripted one (it answers at
once), so the figures are Lore's own.
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

from tests.discord_server import FakeDiscord, user  # noqa: E402

from lore.channels.discord import DiscordChannel  # noqa: E402
from lore.config import Config, DiscordConfig, load_config  # noqa: E402
from lore.events import Inbound  # noqa: E402
from lore.llm.base import ChatRequest  # noqa: E402
from lore.llm.scripted import ScriptedProvider, Step  # noqa: E402
from lore.runtime import build  # noqa: E402

CHANNEL = "810000000000000001"
MOM = user("100000000000000002", "Mom")


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _config(home: Path, fake: FakeDiscord) -> Config:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )
    token = "TEST.TOKEN.discord"
    return replace(config, discord=DiscordConfig(token=token, api_base_url=fake.api_base_url))


async def _through_discord(home: Path, fake: FakeDiscord, turns: int) -> list[float]:
    model = ScriptedProvider()
    model.default = _echo
    config = _config(home, fake)
    lore = build(config, provider=model, clock=_clock())
    channel = DiscordChannel(lore, config.discord)
    task = asyncio.create_task(channel.run_forever())
    timings = []
    try:
        await asyncio.wait_for(channel.ready.wait(), timeout=30)
        for n in range(turns):
            started = time.perf_counter()
            await asyncio.to_thread(
                lambda n=n: fake.say(f"question {n}", channel=CHANNEL, author=MOM, mention_bot=True)
            )
            await asyncio.to_thread(fake.wait_sent, n + 1, 60.0)
            timings.append(time.perf_counter() - started)
        assert len(fake.sent) == turns
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await lore.aclose()
    return timings


async def _through_bus(home: Path, fake: FakeDiscord, turns: int) -> list[float]:
    model = ScriptedProvider()
    model.default = _echo
    lore = build(_config(home, fake), provider=model, clock=_clock())
    timings = []
    for n in range(turns):
        inbound = Inbound(f"discord:{CHANNEL}", "discord", "Mom", f"question {n}", "member")
        started = time.perf_counter()
        await lore.bus.send(inbound)
        timings.append(time.perf_counter() - started)
    await lore.aclose()
    return timings


def _clock() -> Any:
    from lore.clock import SystemClock

    return SystemClock()


async def _main(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, FakeDiscord({CHANNEL: "family"}) as fake:
        discord = await _through_discord(Path(tmp) / "discord", fake, args.turns)
        bus = await _through_bus(Path(tmp) / "bus", fake, args.turns)
    return {
        "discord_turn_p50_ms": statistics.median(discord) * 1000,
        "bus_turn_p50_ms": statistics.median(bus) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(_main(args))
    if args.json:
        print(json.dumps(figures))
        return
    discord, bus = figures["discord_turn_p50_ms"], figures["bus_turn_p50_ms"]
    print(f"addressed channel turn through Discord (MESSAGE_CREATE to reply): p50 {discord:.2f} ms")
    print(f"  baseline: the same turn handed to the bus: p50 {bus:.2f} ms ({discord / bus:.1f}x)")


if __name__ == "__main__":
    main()
