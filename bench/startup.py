"""Start-up and context-build time, each beside a baseline measured in the same run.

    python bench/startup.py [--runs N] [--json]

- `lore --help` and `lore --version` wall time (budget ≤ 300 ms) vs `python -c pass` (the
  interpreter alone).
- Building a turn's system prompt vs reading the same workspace files raw.
- A chat's start (recovery of interrupted closes, then a group conversation's system
  prompt with its recent history) with 10,000 archived sessions and history entries,
  beside the same start with 10: what is stored must not slow every start.
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
        built: list[float] = []
        raw: list[float] = []
        for _ in range(runs):
            start = time.perf_counter()
            conversation.system_prompt()
            built.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            for name in ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"):
                (workspace / name).read_text(encoding="utf-8")
            raw.append((time.perf_counter() - start) * 1000)
        asyncio.run(lore.aclose())
    return built, raw


def _home_with_history(home: Path, sessions: int) -> None:
    """`sessions` archived sessions (and as many history entries, mostly the owner's) written
    through Lore's own stores. fsync is skipped while filling: only the reads are timed."""
    import os
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    from lore.backends.local.archive import SessionArchive
    from lore.backends.local.history import History
    from lore.messages import Message
    from lore.ports.sessions import SessionMeta

    real_fsync = os.fsync
    os.fsync = lambda fd: None
    try:
        archive = SessionArchive(home / "sessions", home)
        history = History(home / "workspace" / "memory")
        start = datetime(2024, 1, 1, tzinfo=UTC)
        for n in range(sessions):
            moment = start + timedelta(hours=n)
            stamp = moment.isoformat()
            meta = SessionMeta(f"{n:08x}" + "0" * 24, "cli:default", stamp, stamp)
            said: list[Message] = [
                {
                    "role": "user",
                    "content": f"note {n}: the train leaves at nine",
                    "timestamp": stamp,
                },
                {"role": "assistant", "content": "Noted.", "timestamp": stamp},
            ]
            entry = archive.write_transcript(
                meta, said, ended_at=moment, zone=UTC, slug=f"s{n}", reason="new"
            )
            archive.append_index(replace(entry, summary="written"))
            key = "line:group:family" if n % 1000 == 0 else "cli:default"
            history.append(key, f"summary {n}", now=moment)
    finally:
        os.fsync = real_fsync


def _chat_start(sessions: int, runs: int) -> tuple[float, float]:
    """p50 ms of a chat's start: the first after the history was written, and later ones."""
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import build
    from lore.sessions.closing import recover_interrupted

    with tempfile.TemporaryDirectory() as home:
        _home_with_history(Path(home), sessions)
        samples = []
        for _ in range(runs + 1):
            config = load_config(env={"LORE_HOME": home}, flags={"model": "scripted"})
            lore = build(config, provider=ScriptedProvider())
            began = time.perf_counter()
            recover_interrupted(lore)
            lore.conversation("line:group:family", emit=lambda event: None).system_prompt()
            samples.append((time.perf_counter() - began) * 1000)
            asyncio.run(lore.aclose())
    return samples[0], statistics.median(samples[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    python = _time_command([sys.executable, "-c", "pass"], args.runs)
    helped = _time_command([sys.executable, "-m", "lore", "--help"], args.runs)
    version = _time_command([sys.executable, "-m", "lore", "--version"], args.runs)
    build, raw = _context_build(args.runs * 20)
    small_first, small = _chat_start(10, args.runs)
    large_first, large = _chat_start(10_000, args.runs)
    figures = {
        "chat_start_10_sessions_p50_ms": small,
        "chat_start_10000_sessions_p50_ms": large,
        "chat_start_10_sessions_first_ms": small_first,
        "chat_start_10000_sessions_first_ms": large_first,
        "help_p50_ms": statistics.median(helped),
        "version_p50_ms": statistics.median(version),
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
    print(
        f"lore --version   p50 {figures['version_p50_ms']:7.1f} ms   "
        f"ratio {figures['version_p50_ms'] / figures['python_p50_ms']:.1f}x"
    )
    print(f"context build    p50 {figures['context_build_p50_ms']:7.3f} ms")
    print(
        f"  baseline: raw read of workspace files {figures['raw_file_read_p50_ms']:7.3f} ms   "
        f"ratio {figures['context_build_p50_ms'] / figures['raw_file_read_p50_ms']:.1f}x"
    )
    print(f"chat start, 10,000 archived sessions  p50 {large:7.1f} ms   (first {large_first:.1f})")
    print(
        f"  baseline: 10 archived sessions      p50 {small:7.1f} ms   (first {small_first:.1f})"
        f"   ratio {large / small:.1f}x"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
