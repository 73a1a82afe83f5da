"""What the owner's tools cost, each figure beside a baseline measured in the same run.

    python bench/owner_tools.py [--files 2000] [--skills 20] [--runs 200] [--json]

- read_file through the confinement (folder by folder, O_NOFOLLOW, inode check) beside
  a plain `open().read()` of the same 100 KB file;
- grep over a project of --files files beside a plain os.walk + regex over the same tree
  (whole file first, then its lines, as grep does);
- the system prompt of an owner's turn with --skills skills beside the same prompt with none;
- the tool schemas an owner's request carries beside a non-owner's, in tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from lore.config import load_config
from lore.core.tools import ToolContext
from lore.llm.base import ToolCall
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build


def _p50(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _project(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"pkg{i % 40}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"def f{i}_{n}(x):\n    return x + {n}  # 测试 тест\n" for n in range(40))
        (folder / f"mod{i}.py").write_text(body, encoding="utf-8")
    (root / "big.txt").write_text("строка line 行\n" * 6000, encoding="utf-8")


def _skills(workspace: Path, count: int) -> None:
    for i in range(count):
        folder = workspace / "skills" / f"skill-{i}"
        folder.mkdir(parents=True, exist_ok=True)
        always = "true" if i < 2 else "false"
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Does task {i} well\nalways: {always}\n---\n"
            + "Step one. Step two.\n" * 20,
            encoding="utf-8",
        )


def _ctx(scope: str, project: Path | None) -> ToolContext:
    return ToolContext(
        scope=scope,
        author="john",
        session_id="bench",
        message_index=0,
        now=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        timezone="UTC",
        owner=scope.startswith("cli:"),
        project=project,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--skills", type=int, default=20)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        _project(project, args.files)
        config = load_config(env={"LORE_HOME": str(home)}, flags={"model": "scripted"})
        lore = build(config, provider=ScriptedProvider())
        owner = _ctx("cli:default", project)
        loop = asyncio.new_event_loop()

        def tool(name: str, arguments: dict[str, object]) -> str:
            call = ToolCall("c", name, json.dumps(arguments))
            result = loop.run_until_complete(lore.tools.call(call, owner))
            assert not result.is_error, result.content
            return result.content

        big = project / "big.txt"
        read_tool = _p50(lambda: tool("read_file", {"path": "big.txt"}), args.runs)
        read_plain = _p50(lambda: big.read_text(encoding="utf-8"), args.runs)

        pattern = re.compile("f7_3")

        def plain_grep() -> list[str]:
            found: list[str] = []
            for folder, _, names in os.walk(project):
                for name in names:
                    text = Path(folder, name).read_text(encoding="utf-8")
                    if not pattern.search(text):
                        continue
                    found.extend(line for line in text.splitlines() if pattern.search(line))
            return found

        grep_runs = max(args.runs // 20, 5)
        grep_tool = _p50(lambda: tool("grep", {"pattern": "f7_3"}), grep_runs)
        grep_plain = _p50(plain_grep, grep_runs)

        turns = lore.bus.turns
        prompt_none = _p50(lambda: turns.system_prompt(owner), args.runs)
        _skills(lore.workspace.root, args.skills)
        prompt_skills = _p50(lambda: turns.system_prompt(owner), args.runs)

        def schema_tokens(ctx: ToolContext) -> int:
            specs = [vars(spec) for spec in lore.tools.specs(ctx)]
            return lore.tokens.count(json.dumps(specs, ensure_ascii=False))

        owner_tokens = schema_tokens(owner)
        guest_tokens = schema_tokens(_ctx("telegram:1", None))
        loop.run_until_complete(lore.aclose())
        loop.close()
    rows = [
        ("read_file 100 KB, p50 ms", read_tool, "plain open().read()", read_plain),
        (f"grep {args.files} files, p50 ms", grep_tool, "os.walk + re", grep_plain),
        (f"system prompt, {args.skills} skills, p50 ms", prompt_skills, "no skills", prompt_none),
        ("tool schemas, owner, tokens", owner_tokens, "non-owner", guest_tokens),
    ]
    if args.json:
        print(
            json.dumps(
                [dict(zip(("what", "value", "baseline", "base"), r, strict=True)) for r in rows]
            )
        )
        return
    for what, value, baseline, base in rows:
        print(f"{what:<36} {value:>9.2f}   {baseline:<20} {base:>9.2f}   ×{value / base:.2f}")


if __name__ == "__main__":
    main()
