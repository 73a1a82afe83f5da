"""`lore.Memory` as a library: `add` (no extraction) and `search` at 10,000 memories (and
100,000 with --large), beside mem0's `add(infer=False)` and `search` with the same
embeddings and beside raw SQLite in the same run; then `lore.Client`'s overhead beside a
bare httpx call to the same `lore serve` app.

    python bench/memory_api.py [--memories 10000] [--large] [--queries 200]
        [--mem0-python /tmp/mem0env/bin/python] [--mem0-queries N] [--client-calls 300] [--json]

(--mem0-queries: fewer searches for mem0, whose search at 100,000 takes seconds;
--client-calls 0 leaves the client out.)

Both memory layers embed with Lore's offline hash embedder (character bigrams in 64
dimensions, `lore.backends.fake.embedder`): the same vectors for both, no model to load,
so 100,000 memories fit in minutes and what is timed is each layer's own work (a real
model adds its query time, a few ms, to both alike; see search_latency.py). mem0 runs in
its own environment (`python3 -m venv /tmp/mem0env && /tmp/mem0env/bin/pip install
mem0ai`), never a dependency of Lore, with its local Qdrant (on disk) and its SQLite
history, telemetry off; it is skipped, with the reason, when that environment is absent.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EMBEDDER_FILE = ROOT / "src" / "lore" / "backends" / "fake" / "embedder.py"
SCOPE = "api:bench"
TOKEN = "bench-token"
_SYLLABLES = "ka lo mi ne ru sa to vi de fa go hu ji ke la mo nu pe ri su ta ve wo xi yo za".split()
_HAN = "我们决定用数据库会议咖啡上海北京明天周末项目接口设计缓存服务器部署测试家人旅行医生"


def texts(count: int, seed: int = 7) -> list[str]:
    """`count` distinct memory-like sentences (one in ten Chinese), the same in every process."""
    rng = random.Random(seed)
    words = sorted(
        {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)}
    )
    found: list[str] = []
    for number in range(count):
        if number % 10 == 9:
            body = "".join(rng.choice(_HAN) for _ in range(rng.randint(8, 16)))
        else:
            body = " ".join(rng.choice(words) for _ in range(rng.randint(5, 12)))
        found.append(f"{body} ({number})")
    return found


def queries(corpus: list[str], count: int, seed: int = 11) -> list[str]:
    """Two or three words of a stored sentence (the Chinese ones: four characters)."""
    rng = random.Random(seed)
    found: list[str] = []
    for text in rng.sample(corpus, count):
        body = text.rsplit(" (", 1)[0]
        if " " in body:
            words = body.split()
            start = rng.randrange(max(1, len(words) - 2))
            found.append(" ".join(words[start : start + rng.randint(2, 3)]))
        else:
            start = rng.randrange(max(1, len(body) - 4))
            found.append(body[start : start + 4])
    return found


def summary(seconds: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds, and calls a second."""
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p95_ms": p95 * 1000,
        "per_s": len(ordered) / sum(ordered),
    }


def timed(call: Callable[[str], object], items: list[str]) -> list[float]:
    """Seconds each `call(item)` took."""
    seconds: list[float] = []
    for item in items:
        began = time.perf_counter()
        call(item)
        seconds.append(time.perf_counter() - began)
    return seconds


def hash_embedder() -> Any:
    """Lore's hash embedder, loaded from its file (numpy only: mem0's environment has no Lore)."""
    spec = importlib.util.spec_from_file_location("lore_hash_embedder", EMBEDDER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HashEmbedder()


# -- Lore --------------------------------------------------------------------------------


def lore_config(home: Path) -> Any:
    from lore.config import load_config

    return load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"timezone": "UTC", "extraction.enabled": False, "api.requests_per_minute": 0},
    )


def lore_run(corpus: list[str], asked: list[str], home: Path) -> dict[str, Any]:
    import lore

    embedder = hash_embedder()
    with lore.Memory(config=lore_config(home), scope=SCOPE, embedder=embedder) as memory:
        added = timed(memory.add, corpus)
    # Closing waits for the search index to embed what was added; search a fresh open.
    with lore.Memory(config=lore_config(home), scope=SCOPE, embedder=embedder) as memory:
        for query in asked[:10]:
            memory.search(query)  # warm: the vectors' matrix is loaded on first search
        found = [0]

        def search(query: str) -> None:
            hits = memory.search(query, limit=10)
            found[0] += bool(hits)

        searched = timed(search, asked)
    return {"add": summary(added), "search": summary(searched), "found": found[0] / len(asked)}


def sqlite_run(corpus: list[str], asked: list[str], folder: Path) -> dict[str, Any]:
    """The floor: a row inserted and committed, an FTS5 bm25 query, in the same process."""
    db = sqlite3.connect(folder / "raw.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, content TEXT)")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(content, content='m', content_rowid='id')")

    def insert(text: str) -> None:
        cursor = db.execute("INSERT INTO m (content) VALUES (?)", (text,))
        db.execute("INSERT INTO f (rowid, content) VALUES (?, ?)", (cursor.lastrowid, text))
        db.commit()

    added = timed(insert, corpus)

    def search(query: str) -> None:
        words = " OR ".join(f'"{word}"' for word in query.split())
        db.execute(
            "SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 10", (words,)
        ).fetchall()

    searched = timed(search, asked)
    db.close()
    return {"add": summary(added), "search": summary(searched)}


# -- mem0 (run in its own environment: --mem0-worker) ------------------------------------


def mem0_worker(count: int, query_count: int, folder: Path) -> None:
    """mem0's add(infer=False) and search over the same texts and vectors; prints JSON."""
    os.environ.update(MEM0_TELEMETRY="False", MEM0_DIR=str(folder / "mem0-dir"))
    os.environ.setdefault("OPENAI_API_KEY", "sk-unused")  # its LLM is built, never called
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase

    embedder = hash_embedder()

    class SameVectors(EmbeddingBase):  # type: ignore[misc]
        def __init__(self) -> None:
            pass

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return [float(x) for x in embedder.embed_passages([text])[0]]

    store = {"path": str(folder / "qdrant"), "collection_name": "bench", "on_disk": True}
    memory = Memory.from_config(
        {
            "vector_store": {"provider": "qdrant", "config": {**store, "embedding_model_dims": 64}},
            "history_db_path": str(folder / "mem0-history.db"),
        }
    )
    memory.embedding_model = SameVectors()
    corpus = texts(count)
    asked = queries(corpus, query_count)
    added = timed(lambda text: memory.add(text, user_id="bench", infer=False), corpus)
    for query in asked[:10]:
        memory.search(query, filters={"user_id": "bench"}, top_k=10)
    found = [0]

    def search(query: str) -> None:
        hits = memory.search(query, filters={"user_id": "bench"}, top_k=10)
        found[0] += bool(hits.get("results"))

    searched = timed(search, asked)
    print(
        json.dumps(
            {"add": summary(added), "search": summary(searched), "found": found[0] / len(asked)}
        )
    )


def mem0_run(python: Path, count: int, query_count: int, folder: Path) -> dict[str, Any]:
    """mem0's figures, or {"skipped": one line saying why}."""
    if not python.exists():
        return {"skipped": f"no mem0 environment at {python} (python3 -m venv; pip install mem0ai)"}
    probe = subprocess.run([python, "-c", "import mem0"], capture_output=True, text=True)
    if probe.returncode != 0:
        return {
            "skipped": f"mem0 does not import in {python}: {probe.stderr.strip().splitlines()[-1]}"
        }
    env = {**os.environ, "HOME": str(folder), "PYTHONPATH": ""}  # nothing of it lands in $HOME
    done = subprocess.run(
        [
            python,
            __file__,
            "--mem0-worker",
            "--memories",
            str(count),
            "--queries",
            str(query_count),
            "--folder",
            str(folder),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = [row for row in done.stdout.splitlines() if row.startswith("{")]
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"skipped": f"mem0 failed offline: {why}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# -- the client ----------------------------------------------------------------------------


def serve(home: Path) -> None:
    """The child process: `lore serve`'s app on a free port of 127.0.0.1, until stdin closes."""
    import asyncio
    import socket

    import uvicorn

    from lore.channels.http import create_app
    from lore.channels.http.auth import Clients
    from lore.runtime import build

    config = lore_config(home)
    lore = build(config, embedder=hash_embedder())
    app = create_app(lore, clients=Clients(TOKEN, config), mcp=False)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="error", access_log=False, timeout_keep_alive=120)
    )

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        await asyncio.to_thread(sys.stdin.read)
        server.should_exit = True
        await task
        await lore.aclose()

    asyncio.run(main())


def client_run(folder: Path, calls: int) -> dict[str, Any]:
    """`Client.search` and `Client.remember` beside the same requests made with bare httpx
    (one pooled connection each, interleaved so both see the same server)."""
    import httpx

    import lore

    home = folder / "served"
    corpus = texts(1000, seed=3)
    with lore.Memory(config=lore_config(home), scope=SCOPE, embedder=hash_embedder()) as memory:
        for text in corpus:
            memory.remember(text)
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    port = json.loads(child.stdout.readline())["port"]
    url = f"http://127.0.0.1:{port}"
    asked = queries(corpus, calls)
    times: dict[str, list[float]] = {
        "client search": [],
        "httpx search": [],
        "client remember": [],
        "httpx remember": [],
    }
    try:
        with (
            lore.Client(url, token=TOKEN, scope=SCOPE) as client,
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as bare,
        ):
            for query in asked[:10]:
                client.search(query)
                bare.get("/api/search", params={"scope": SCOPE, "q": query, "limit": 10}).json()
            requests: dict[str, Callable[[str, str], object]] = {
                "client search": lambda query, note: client.search(query),
                "httpx search": lambda query, note: bare.get(
                    "/api/search", params={"scope": SCOPE, "q": query, "limit": 10}
                ).json(),
                "client remember": lambda query, note: client.remember(f"{note} (client)"),
                "httpx remember": lambda query, note: bare.post(
                    "/api/memories", params={"scope": SCOPE}, json={"content": f"{note} (bare)"}
                ).json(),
            }
            for number, query in enumerate(asked):
                names = list(requests)
                if number % 2:
                    names = [names[1], names[0], names[3], names[2]]  # alternate who goes first
                for name in names:
                    began = time.perf_counter()
                    requests[name](query, f"call {number}: {query}")
                    times[name].append(time.perf_counter() - began)
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    return {name: summary(seconds) for name, seconds in times.items()}


# -- the report ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument(
        "--large", action="store_true", help="also 100,000 memories (slow with mem0)"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mem0-python", type=Path, default=Path("/tmp/mem0env/bin/python"))
    parser.add_argument("--mem0-queries", type=int, help="searches for mem0 (default: --queries)")
    parser.add_argument("--client-calls", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--mem0-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mem0_worker:
        mem0_worker(args.memories, args.queries, args.folder)
        return
    if args.serve:
        serve(args.serve)
        return
    sys.path.insert(0, str(ROOT / "src"))
    report: dict[str, Any] = {"sizes": {}}
    for count in [args.memories, *([100_000] if args.large else [])]:
        corpus = texts(count)
        asked = queries(corpus, args.queries)
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            (folder / "mem0").mkdir()
            report["sizes"][count] = {
                "lore": lore_run(corpus, asked, folder / "home"),
                "sqlite": sqlite_run(corpus, asked, folder),
                "mem0": mem0_run(
                    args.mem0_python, count, args.mem0_queries or args.queries, folder / "mem0"
                ),
            }
    if args.client_calls:
        with tempfile.TemporaryDirectory() as scratch:
            report["client"] = client_run(Path(scratch), args.client_calls)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for count, result in report["sizes"].items():
        print(f"{count:,} memories (hash embeddings, 64 dims, the same for Lore and mem0):")
        for what in ("add", "search"):
            for name in ("lore", "mem0", "sqlite"):
                shown = result[name]
                if "skipped" in shown:
                    print(f"  {what:6} {name:6} skipped: {shown['skipped']}")
                    continue
                figures = shown[what]
                found = (
                    f", {shown['found']:.0%} of queries found something"
                    if what == "search" and "found" in shown
                    else ""
                )
                p50, p95, rate = figures["p50_ms"], figures["p95_ms"], figures["per_s"]
                print(
                    f"  {what:6} {name:6} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms"
                    f"  {rate:8.0f}/s{found}"
                )
    if "client" in report:
        print("Client against lore serve (1,000 memories), beside bare httpx:")
    for name, figures in report.get("client", {}).items():
        print(f"  {name:16} p50 {figures['p50_ms']:6.2f} ms  p95 {figures['p95_ms']:6.2f} ms")


if __name__ == "__main__":
    main()
