"""Prompt tokens per heartbeat run over 100 runs: flat, beside a growing-session baseline.

    python bench/heartbeat_tokens.py [--runs 100] [--json]

A fresh home (SQLite) with a HEARTBEAT.md checklist and the scripted model, which
answers HEARTBEAT_OK (and, every tenth run, something for the owner). Each heartbeat
run is one turn as `lore serve` runs it; its prompt tokens are the request's system
prompt and messages, counted by Lore's token counter. The baseline is the same
checklist sent as an ordinary message in one conversation that keeps its history (what
a heartbeat kept in a session of its own costs, as nanobot's does): its prompt grows
with every run until the window budget cuts it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lore.config import load_config
from lore.daemon import Daemon
from lore.events import Inbound
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime, build
from lore.tasks.heartbeat import heartbeat_once

CHECKLIST = """# Heartbeat
- Is a reminder or a task overdue?
- Did anyone in the family chat ask me something I did not answer?
- 这周有没有快到期的证件或账单？
- Нет ли дел на завтра, о которых стоит напомнить?
"""


def _answers() -> Callable[[ChatRequest], Step]:
    """HEARTBEAT_OK, and every tenth answer something for the owner."""
    calls = itertools.count(1)

    def answer(request: ChatRequest) -> Step:
        if next(calls) % 10 == 0:
            return Step(text="The electricity bill is due tomorrow. 电费明天到期。")
        return Step(text="HEARTBEAT_OK")

    return answer


def _tokens(lore: Runtime, request: ChatRequest) -> int:
    return lore.tokens.count_messages(request.messages, request.system)


async def _measure(home: Path, runs: int) -> dict[str, list[int]]:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "owner"},
        flags={"model": "scripted", "extraction.enabled": False, "timezone": "UTC"},
    )
    model = ScriptedProvider()
    model.default = _answers()
    lore = build(config, provider=model)
    daemon = Daemon(lore)
    try:
        for _ in range(runs):
            await heartbeat_once(lore, daemon._task_turn)
        heartbeat = [_tokens(lore, r) for r in model.requests]
        model.requests.clear()
        for _ in range(runs):  # the baseline: the same check, in a session that keeps it
            await lore.bus.send(Inbound("cli:growing", "cli", "owner", CHECKLIST))
        growing = [_tokens(lore, r) for r in model.requests]
    finally:
        await lore.aclose()
    return {"heartbeat": heartbeat, "growing_session": growing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "HEARTBEAT.md").write_text(CHECKLIST, encoding="utf-8")
        found = asyncio.run(_measure(home, args.runs))
    report: dict[str, Any] = {
        name: {"first": values[0], "last": values[-1], "max": max(values), "runs": len(values)}
        for name, values in found.items()
    }
    beat, grow = report["heartbeat"], report["growing_session"]
    report["heartbeat_flat"] = beat["first"] == beat["last"] == beat["max"]
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"prompt tokens per run over {args.runs} runs (scripted model, Lore's counter)")
    print(f"  heartbeat (fresh each run): first {beat['first']}, last {beat['last']}, "
          f"max {beat['max']}")  # fmt: skip
    print(f"  baseline, growing session:  first {grow['first']}, last {grow['last']}, "
          f"max {grow['max']}  ({grow['last'] / grow['first']:.1f}x the first)")  # fmt: skip
    flat = "flat" if report["heartbeat_flat"] else "NOT flat"
    print(f"  the heartbeat's prompt is {flat}: last/first = {beat['last'] / beat['first']:.2f}")


if __name__ == "__main__":
    main()
