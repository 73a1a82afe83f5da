"""What a reply's `why` record costs per turn, beside the same turn without it, one run.

    python bench/provenance.py [--turns 200] [--memories 30] [--json]

Each turn is a real one through the conversation against the scripted provider: the
memory block shows --memories memories, the model calls `memory_search` (up to 8 hits),
then answers. Turns with the record and turns without it alternate, in one process on one
home, so both columns see the same machine, session size and page cache. "Without" stores
the reply as before the record existed (the turn's `_keep_why` step skipped); gathering
ids during the turn stays in both, being a few set and list appends. Reported: p50 and
p95 of the turn in ms, their ratio, and the bytes each turn adds to the transcript.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lore.config import load_config
from lore.core import turn as turn_module
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build

SCOPE = "cli:default"
FACTS = [
    "John drinks oolong tea every morning, note {}",
    "约翰周末去花莲看妈妈，第{}条",
    "Джон гуляет с собакой у реки, заметка {}",
]


async def measure(turns: int, memories: int) -> dict[str, Any]:
    keep_why = turn_module._keep_why

    def without(added: Any, ctx: Any) -> None:
        return None

    with tempfile.TemporaryDirectory() as home:
        config = load_config(
            env={"LORE_HOME": home, "USER": "john"},
            flags={"model": "scripted", "extraction.enabled": False},
        )
        model = ScriptedProvider()
        lore = build(config, provider=model)
        now = lore.clock.now()
        for i in range(memories):
            lore.memory.remember(SCOPE, FACTS[i % 3].format(i), author="john", via="cli", now=now)
        send = lore.conversation(SCOPE, emit=lambda e: None).send
        samples: dict[str, list[float]] = {"with": [], "without": []}
        sizes: dict[str, list[int]] = {"with": [], "without": []}
        why_bytes: list[int] = []
        for n in range(turns * 2 + 2):
            kind = "with" if n % 2 else "without"
            turn_module._keep_why = keep_why if kind == "with" else without
            model.tool_call("memory_search", {"query": "oolong tea 花莲 собака"})
            model.reply("You drink oolong every morning. " * 4)
            before = _transcript_bytes(home)
            start = time.perf_counter()
            await send(f"message {n}: what do I drink in the morning?")
            elapsed = (time.perf_counter() - start) * 1000
            if n < 2:
                continue  # warm-up: one of each
            samples[kind].append(elapsed)
            sizes[kind].append(_transcript_bytes(home) - before)
            if kind == "with":
                reply = lore.session(SCOPE).messages[-1]
                why_bytes.append(len(json.dumps(reply.get("why", {}), ensure_ascii=False)))
        turn_module._keep_why = keep_why
        await lore.background.drain()
        await lore.aclose()

    def p(values: list[float], q: int) -> float:
        return round(statistics.quantiles(values, n=20)[q - 1], 3)

    result: dict[str, Any] = {"turns": turns, "memories": memories}
    for kind in ("with", "without"):
        result[f"{kind}_p50_ms"] = round(statistics.median(samples[kind]), 3)
        result[f"{kind}_p95_ms"] = p(samples[kind], 19)
        result[f"{kind}_bytes_per_turn"] = round(statistics.mean(sizes[kind]))
    result["p50_ratio"] = round(result["with_p50_ms"] / result["without_p50_ms"], 3)
    result["why_record_bytes"] = round(statistics.mean(why_bytes))
    result["bytes_ratio"] = round(
        result["with_bytes_per_turn"] / result["without_bytes_per_turn"], 3
    )
    return result


def _transcript_bytes(home: str) -> int:
    return sum(path.stat().st_size for path in Path(home, "sessions").glob("*.jsonl"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns of each kind")
    parser.add_argument("--memories", type=int, default=30, help="memories in the block")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(measure(args.turns, args.memories))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{result['turns']} turns of each kind, {result['memories']} memories in the block")
    print(
        f"turn p50: {result['with_p50_ms']} ms with the record, "
        f"{result['without_p50_ms']} ms without (ratio {result['p50_ratio']})"
    )
    print(f"turn p95: {result['with_p95_ms']} ms with, {result['without_p95_ms']} ms without")
    print(
        f"transcript bytes per turn: {result['with_bytes_per_turn']} with, "
        f"{result['without_bytes_per_turn']} without (ratio {result['bytes_ratio']}); "
        f"the record itself: {result['why_record_bytes']} bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
