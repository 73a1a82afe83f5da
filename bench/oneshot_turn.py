"""A one-shot `lore chat -m hi` process beside nanobot's `nanobot agent -m hi`, both on the
same scripted OpenAI-compatible server, and `python -c pass` as the floor.

    python bench/oneshot_turn.py [--runs N] [--nanobot PATH] [--before SRC] [--memories N]

Each process is timed whole: wall time, CPU (user + system, its own and its children's,
from `os.wait4`) and peak memory (max RSS). Lore runs in two homes: an empty one and one
whose conversation holds --memories memories with vectors (built once, through Lore's own
stores, before the timed runs). The model is tests/openai_server.py on 127.0.0.1: it
answers the turn "Hello! How can I help?" and extraction's request "[]" at once, so what
is measured is each program's own work. nanobot runs from its own environment
(`--nanobot`, default /tmp/nanobotenv/bin/nanobot; install `nanobot-ai` there, never
beside Lore) with a config pointing at the same server; absent, it is skipped with a
line saying so. `--before SRC` (a `src` directory of another revision, e.g. from
`git archive main src | tar -x -C /tmp/base`) adds that revision's columns from the same
run. Runs are interleaved (floor, nanobot, each Lore), medians printed, with ratios to
nanobot, and the size of each program's first request (its tool schemas included).
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
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.openai_server import FakeOpenAI  # noqa: E402

REPLY = "Hello! How can I help?"
NANOBOT = Path("/tmp/nanobotenv/bin/nanobot")

_BUILD = """
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import numpy as np
from scale import corpus, embed_sample
from lore.config import load_config
from lore.runtime import build
from lore.search import searcher

home, count = Path(sys.argv[1]), int(sys.argv[2])
texts = corpus(count, [])
vectors, _ = embed_sample(texts[:64])
lore = build(load_config(env={"LORE_HOME": str(home)}, flags={"model": "scripted"}))
scope = "cli:default"  # the terminal's conversation: its memories are the owner's
now = datetime.now(UTC)
rows = []
for i, (speaker, text) in enumerate(texts):
    at = (now - timedelta(minutes=37 * (count - i))).isoformat(timespec="microseconds")
    kind = ("fact", "preference", "event", "plan")[i % 4]
    rows.append((scope, text[:500], kind, "[]", speaker, at, at, f"k{i}"))
with lore.db.atomic() as conn:
    conn.executemany(
        "INSERT INTO memories (scope, content, kind, keywords, author, created_at,"
        " updated_at, content_key) VALUES (?,?,?,?,?,?,?,?)", rows)
search = searcher(lore)
search.refresh(files=False)
index = search.index
ids = [int(r[0]) for r in lore.db.conn.execute("SELECT id FROM search_entries ORDER BY id")]
rng = np.random.default_rng(3)
picked = vectors[np.arange(len(ids)) % len(vectors)]
picked = picked + rng.normal(0.0, 0.02, picked.shape).astype(np.float32)
picked /= np.linalg.norm(picked, axis=1, keepdims=True)
index.store_vectors(ids, picked.astype(np.float32))
index.check_model()
lore.db.checkpoint()
lore.db.close()
"""


class _Answering(deque[tuple[int, Any, dict[str, str]]]):
    """The fake server's queue, never empty: extraction's request gets "[]", any other the
    reply (whatever asks, however often)."""

    def __init__(self, server: FakeOpenAI) -> None:
        super().__init__()
        self.server = server

    def __bool__(self) -> bool:
        return True

    def popleft(self) -> tuple[int, Any, dict[str, str]]:
        request = self.server.requests[-1]
        system = str(request.get("messages", [{}])[0].get("content", ""))
        text = "[]" if "Reply with a JSON array" in system else REPLY
        FakeOpenAI.reply(self.server, text)  # appends to this queue; take it back
        return super().popleft()


def answering_server() -> FakeOpenAI:
    server = FakeOpenAI()
    server._queue = _Answering(server)
    return server.start()


@dataclass
class Sample:
    wall: float  # seconds
    cpu: float  # seconds, user + system
    rss: float  # MiB


def run(argv: Sequence[str], env: dict[str, str], cwd: Path) -> Sample:
    """One whole process, which must exit 0 (and, unless it is the floor, say the reply)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        said = out.read().decode(errors="replace")
        if child.returncode != 0 or (REPLY not in said and argv[1:] != ["-c", "pass"]):
            raise SystemExit(
                f"{' '.join(argv[:4])} failed ({child.returncode}): "
                f"{said[-300:]} {err.read().decode(errors='replace')[-600:]}"
            )
    # ru_maxrss is in KiB on Linux.
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def _environment() -> dict[str, str]:
    """This environment without model settings, and with bytecode caching on: a program
    that compiles its sources on every start is not what people run."""
    drop = ("OPENAI", "ANTHROPIC", "LORE", "PYTHONDONTWRITEBYTECODE")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def lore_env(src: Path, home: Path, server: FakeOpenAI) -> dict[str, str]:
    env = _environment()
    env.update(
        PYTHONPATH=str(src),
        LORE_HOME=str(home),
        OPENAI_API_KEY="sk-bench",
        OPENAI_BASE_URL=server.base_url,
        LORE_MODEL="openai/gpt-4o-mini",
        LORE_USER="anna",
        LORE_TIMEZONE="UTC",
    )
    return env


def nanobot_env(home: Path, server: FakeOpenAI) -> dict[str, str]:
    config = {
        "agents": {"defaults": {"model": "gpt-4o-mini", "provider": "custom"}},
        "providers": {"custom": {"apiKey": "sk-bench", "apiBase": server.base_url}},
    }
    (home / ".nanobot").mkdir(parents=True, exist_ok=True)
    (home / ".nanobot" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    env = _environment()
    env.update(HOME=str(home), NO_COLOR="1", TERM="dumb")
    return env


def build_home(src: Path, home: Path, memories: int) -> None:
    env = {**_environment(), "PYTHONPATH": str(src), "LORE_HOME": str(home)}
    subprocess.run(
        [sys.executable, "-c", _BUILD, str(home), str(memories), str(ROOT / "bench")],
        env=env,
        check=True,
        capture_output=True,
    )


def median(samples: list[Sample]) -> Sample:
    return Sample(
        statistics.median(s.wall for s in samples),
        statistics.median(s.cpu for s in samples),
        statistics.median(s.rss for s in samples),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed processes per column")
    parser.add_argument("--nanobot", type=Path, default=NANOBOT, help="nanobot's executable")
    parser.add_argument("--before", type=Path, help="another revision's src directory")
    parser.add_argument("--memories", type=int, default=10_000, help="in the full home")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    args = parser.parse_args(argv)

    server = answering_server()
    columns: dict[str, tuple[list[str], dict[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="lore-oneshot-") as scratch:
        tmp = Path(scratch)
        columns["python -c pass"] = ([sys.executable, "-c", "pass"], _environment())
        if args.nanobot.exists():
            env = nanobot_env(tmp / "nanobot", server)
            columns["nanobot agent -m hi"] = ([str(args.nanobot), "agent", "-m", "hi"], env)
        else:
            print(f"nanobot skipped: {args.nanobot} not found", file=sys.stderr)
        sources = [("", ROOT / "src")]
        if args.before is not None:
            sources.insert(0, ("before ", args.before))
        for label, src in sources:
            empty, full = tmp / f"{label}empty", tmp / f"{label}full"
            empty.mkdir()
            print(f"building {label}home with {args.memories:,} memories…", file=sys.stderr)
            build_home(src, full, args.memories)
            argv_ = [sys.executable, "-m", "lore", "chat", "-m", "hi"]
            columns[f"{label}lore, empty home"] = (argv_, lore_env(src, empty, server))
            columns[f"{label}lore, {args.memories // 1000}k memories"] = (
                argv_,
                lore_env(src, full, server),
            )
        found: dict[str, list[Sample]] = {name: [] for name in columns}
        first: dict[str, tuple[int, int]] = {}  # each program's first request: bytes, tools
        for name, (command, env) in columns.items():  # warm: caches, first-run set-up
            asked = len(server.requests)
            run(command, env, tmp)
            if len(server.requests) > asked:
                request = server.requests[asked]
                body = json.dumps(request, ensure_ascii=False).encode()
                first[name] = (len(body), len(request.get("tools") or []))
        for _ in range(args.runs):
            for name, (command, env) in columns.items():
                found[name].append(run(command, env, tmp))
    server.stop()

    medians = {name: median(samples) for name, samples in found.items()}
    if args.json:
        print(json.dumps({name: vars(m) for name, m in medians.items()}, indent=2))
        return 0
    nanobot = medians.get("nanobot agent -m hi")
    print(f"one-shot turn, median of {args.runs} processes each")
    head = f"{'process':<30}{'wall s':>8}{'CPU s':>8}{'peak MiB':>10}"
    print(head + ("  ×nanobot wall / CPU / memory" if nanobot else ""))
    for name, m in medians.items():
        line = f"{name:<30}{m.wall:>8.2f}{m.cpu:>8.2f}{m.rss:>10.0f}"
        if nanobot and name.startswith(("lore", "before")):
            line += (
                f"  {m.wall / nanobot.wall:.2f} / {m.cpu / nanobot.cpu:.2f} / "
                f"{m.rss / nanobot.rss:.2f}"
            )
        print(line)
    for name, (size, tools) in first.items():
        print(f"first request of {name}: {size:,} B, {tools} tools")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
