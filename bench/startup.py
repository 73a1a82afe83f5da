"""Start-up and context-build time, each beside a baseline measured in the same run.

    python bench/startup.py [--runs N] [--json]

- `lore --help` wall time (budget ≤ 300 ms) vs `python -c pass` (the interpreter alone).
- Building a turn's system prompt vs reading the same workspace files raw.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time_command(argv: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def _context_build(runs: int) -> tuple[list[float], list[float]]:
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import build

    with tempfile.TemporaryDirectory() as home:
        config = load_config(env={"LORE_HOME": home}, flags={"model": "scripted"})
        lore = build(config, provider=ScriptedProvider())
        conversation = lore.conversation("cli:default", emit=lambda event: None)
        workspace = lore.workspace.root
        (workspace / "SOUL.md").write_text("# Soul\n\nCurious and kind.\n" * 20)
        conversation.system_prompt()  # warm: open the database, load templates
        build, raw = [], []
        for _ in range(runs):
            start = time.perf_counter()
            conversation.system_prompt()
            build.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            for name in ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"):
                (workspace / name).read_text(encoding="utf-8")
            raw.append((time.perf_counter() - start) * 1000)
        asyncio.run(lore.aclose())
    return build, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    python = _time_command([sys.executable, "-c", "pass"], args.runs)
    helped = _time_command([sys.executable, "-m", "lore", "--help"], args.runs)
    build, raw = _context_build(args.runs * 20)
    figures = {
        "help_p50_ms": statistics.median(helped),
        "python_p50_ms": statistics.median(python),
        "context_build_p50_ms": statistics.median(build),
        "raw_file_read_p50_ms": statistics.median(raw),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"lore --help      p50 {figures['help_p50_ms']:7.1f} ms   (budget 300 ms)")
    print(
        f"  baseline: python -c pass   {figures['python_p50_ms']:7.1f} ms   "
        f"ratio {figures['help_p50_ms'] / figures['python_p50_ms']:.1f}x"
    )
    print(f"context build    p50 {figures['context_build_p50_ms']:7.3f} ms")
    print(
        f"  baseline: raw read of workspace files {figures['raw_file_read_p50_ms']:7.3f} ms   "
        f"ratio {figures['context_build_p50_ms'] / figures['raw_file_read_p50_ms']:.1f}x"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
