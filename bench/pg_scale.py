"""memory_search at 100,000 and 1,000,000 entries: PostgreSQL beside SQLite, in one run.

    .venv/bin/python bench/pg_scale.py [--sizes 100000,1000000] [--queries 100]
                                       [--sample 1000] [--url postgresql://...] [--json]
                                       [--unpruned]
    make bench-pg-scale

One conversation grows in steps to each size, in ONE database per backend (the
1,000,000 step adds 900,000 entries to the 100,000 already there). The entries are
archived chat turns, 100 to a session, with the text of `bench/scale.py`: every LoCoMo
turn, then generated sentences in English, Chinese and Russian. Vectors: the first
--sample texts are embedded for real (the shipped model); entry i gets real vector
i mod S plus noise vector (i div S) mod S (Gaussian, sigma 0.02 a dimension),
renormalised, the same vectors on both backends (embedding a million texts would take
a day; the cost of a search does not depend on which text a vector came from).

Loading is what a bulk import does, and is timed but not the point:
- SQLite: `SearchIndex.put` and `store_vectors` in chunks of 5,000;
- PostgreSQL: the rows (terms tokenised in Python as `put` does) are written with COPY
  into a staging table, moved into `search_entries` with one INSERT ... SELECT (the
  tsvector built there, the vector computed from the sample and noise tables), with the
  GIN and HNSW indexes dropped during the load and built once after it (the HNSW build
  with its progress read from `pg_stat_progress_create_index`), then ANALYZE.

At each size the queries (LoCoMo questions, Chinese and Russian ones) are timed through
`LoreSearch.search`, the path of the memory_search tool, query embedding included,
hybrid and text only, interleaved across both backends so a busy machine slows both
alike. PostgreSQL's line says how many text searches were answered without ranking
every entry holding a word of the query (common words pruned,
`lore.backends.postgres.bm25`); with
--unpruned, a third line times the same database ranking every entry that holds a word
of the query (no pruning), interleaved with the others. Progress lines (with an
estimate of the time left) go to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.postgres_server
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/scale.py

import scale  # noqa: E402

SCOPE = scale.SCOPE
NOW = scale.NOW
NOISE = 0.02
CHUNK = 5_000
# A server for a million entries: room for the HNSW graph while it is built.
SERVER_SETTINGS = ("shared_buffers=1GB", "maintenance_work_mem=4GB", "work_mem=64MB")


class Bar:
    """A progress bar with rate and time left: redrawn in place on a terminal, a line
    every 15 s otherwise (a log file)."""

    def __init__(self, total: int, label: str, stream: TextIO = sys.stderr) -> None:
        from lore.search.rebuild import Progress

        self._progress = Progress(total, label, stream=stream)
        self._stream = stream
        self._live = stream.isatty()
        self._printed = time.monotonic()

    def advance(self, count: int = 1) -> None:
        self._progress.advance(count)
        if not self._live and time.monotonic() - self._printed >= 15:
            self._printed = time.monotonic()
            print(self._progress.line(), file=self._stream, flush=True)

    def set(self, done: int) -> None:
        self.advance(done - self._progress.done)

    def close(self) -> None:
        self._progress.close()
        if not self._live:
            print(self._progress.line(), file=self._stream, flush=True)


def vectors_for(first: int, count: int, base: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Entry i's vector: base[i % S] + noise[(i // S) % S], renormalised."""
    i = np.arange(first, first + count)
    s = len(base)
    rows = base[i % s] + noise[(i // s) % s]
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    unit: np.ndarray = rows.astype(np.float32)
    return unit


def entry_time(j: int) -> float:
    return (NOW - timedelta(days=3000)).timestamp() + j * 60.0


# -- SQLite ------------------------------------------------------------------------------


def grow_sqlite(
    lore: Any, texts: Sequence[tuple[str, str]], first: int, base: np.ndarray, noise: np.ndarray
) -> None:
    from lore.backends.local.search_index import SearchIndex
    from lore.ports.search import Entry
    from lore.search import searcher

    index = searcher(lore).index
    assert isinstance(index, SearchIndex)  # it stores vectors given
    bar = Bar(len(texts), "SQLite    loading")
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start : start + CHUNK]
        j0 = first + start
        entries = [
            Entry(SCOPE, "message", f"s{(j0 + k) // 100}", (j0 + k) % 100, entry_time(j0 + k),
                  text, speaker)
            for k, (speaker, text) in enumerate(chunk)
        ]  # fmt: skip
        ids = index.put(entries)
        index.store_vectors(ids, vectors_for(j0, len(ids), base, noise))
        bar.advance(len(chunk))
    bar.close()
    index.check_model()
    lore.db.checkpoint()


# -- PostgreSQL --------------------------------------------------------------------------


def grow_postgres(
    lore: Any, texts: Sequence[tuple[str, str]], first: int, base: np.ndarray, noise: np.ndarray
) -> dict[str, float]:
    """Bulk-load entries first.. with COPY, the GIN and HNSW indexes rebuilt after."""
    from lore.backends.local.search_index import searchable_text
    from lore.backends.postgres.search_index import DIMENSIONS, _literal
    from lore.text import index_terms

    db = lore.postgres.db
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    with db.atomic() as conn:
        conn.execute("DROP INDEX IF EXISTS search_entries_embedding")
        conn.execute("DROP INDEX IF EXISTS search_entries_terms")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_vectors (kind text, n int,"
            f" v vector({DIMENSIONS}), PRIMARY KEY (kind, n))"
        )
        if not conn.execute("SELECT 1 FROM bench_vectors LIMIT 1").fetchone():
            with conn.cursor().copy("COPY bench_vectors (kind, n, v) FROM STDIN") as copy:
                for kind, rows in (("base", base), ("noise", noise)):
                    for n, row in enumerate(rows):
                        copy.write_row((kind, n, _literal(row)))
        conn.execute(
            "CREATE UNLOGGED TABLE IF NOT EXISTS bench_stage (j bigint, speaker text,"
            " text text, words text, grams text)"
        )
        conn.execute("TRUNCATE bench_stage")
    bar = Bar(len(texts), "PostgreSQL COPY   ")
    with db.atomic() as conn:
        with conn.cursor().copy(
            "COPY bench_stage (j, speaker, text, words, grams) FROM STDIN"
        ) as copy:
            for k, (speaker, text) in enumerate(texts):
                terms = index_terms(searchable_text(speaker, text))
                copy.write_row((first + k, speaker, text, terms.words, terms.grams))
                if k % 1000 == 999:
                    bar.advance(1000)
    bar.close()
    seconds["copy_s"] = time.perf_counter() - began
    began = time.perf_counter()
    print(f"PostgreSQL: moving {len(texts):,} staged rows into search_entries…", file=sys.stderr)
    s = len(base)
    with db.atomic() as conn:
        conn.execute("SET LOCAL work_mem = '256MB'")
        conn.execute(
            "INSERT INTO search_entries (scope, kind, source, locator, at, speaker, text,"
            " terms, embedding)"
            " SELECT %(scope)s, 'message', 's' || (j / 100), mod(j, 100),"
            " %(start)s + j * 60.0, speaker, text,"
            " setweight(to_tsvector('lore_terms', words), 'A')"
            " || setweight(to_tsvector('lore_terms', grams), 'B'),"
            " l2_normalize(b.v + n.v)"
            " FROM bench_stage"
            " JOIN bench_vectors b ON b.kind = 'base' AND b.n = mod(j, %(s)s)"
            " JOIN bench_vectors n ON n.kind = 'noise' AND n.n = mod(j / %(s)s, %(s)s)"
            " ORDER BY j",
            {"scope": SCOPE, "start": entry_time(0), "s": s},
        )
        conn.execute("TRUNCATE bench_stage")
    seconds["insert_s"] = time.perf_counter() - began
    began = time.perf_counter()
    print("PostgreSQL: building the GIN index of the terms…", file=sys.stderr)
    with db.atomic() as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        conn.execute("CREATE INDEX search_entries_terms ON search_entries USING gin (scope, terms)")
    seconds["gin_s"] = time.perf_counter() - began
    began = time.perf_counter()
    total = db.fetch_one("SELECT count(*) AS n FROM search_entries")
    assert total is not None
    watching = _watch_index_build(db, int(total["n"]))
    try:
        with db.atomic() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '4GB'")
            conn.execute("SET LOCAL max_parallel_maintenance_workers = 1")
            conn.execute(
                "CREATE INDEX search_entries_embedding ON search_entries"
                " USING hnsw (embedding vector_cosine_ops)"
            )
    finally:
        watching.set()
    seconds["hnsw_s"] = time.perf_counter() - began
    with db.atomic() as conn:
        conn.execute("ANALYZE search_entries")
        conn.execute(
            "INSERT INTO search_state (key, value) VALUES ('embedder', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (lore_embedder_name(lore),),
        )
    return seconds


def lore_embedder_name(lore: Any) -> str:
    from lore.search import searcher

    return str(searcher(lore).index.embedder.name)


def _watch_index_build(db: Any, rows: int) -> threading.Event:
    """A thread drawing the HNSW build's progress (tuples done of `rows`) until set."""
    stop = threading.Event()

    def watch() -> None:
        bar = Bar(rows, "PostgreSQL HNSW   ")
        while not stop.wait(2.0):
            row = db.fetch_one(
                "SELECT tuples_done FROM pg_stat_progress_create_index"
                " WHERE relid = 'search_entries'::regclass"
            )
            if row is not None and row["tuples_done"]:
                bar.set(int(row["tuples_done"]))
        bar.set(rows)
        bar.close()

    threading.Thread(target=watch, daemon=True).start()
    return stop


# -- timing ------------------------------------------------------------------------------


def ms(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def summary(times: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def time_searches(lores: dict[str, Any], asked: Sequence[str]) -> dict[str, tuple[float, float]]:
    from lore.search import searcher

    searches = {name: searcher(lore) for name, lore in lores.items()}
    for search in searches.values():  # warm: the model, the caches, the connections
        for query in asked[:5]:
            search.search(query, SCOPE, now=NOW)
            search.search(query, SCOPE, now=NOW, mode="text")
    times: dict[str, list[float]] = {
        f"{name}_{mode}": [] for name in lores for mode in ("hybrid", "text")
    }
    bar = Bar(len(asked), "timing queries    ")
    for query in asked:
        for name, search in searches.items():
            for mode in ("hybrid", "text"):
                times[f"{name}_{mode}"].append(
                    ms(partial(search.search, query, SCOPE, now=NOW, mode=mode))
                )
        bar.advance()
    bar.close()
    return {key: summary(values) for key, values in times.items()}


# -- the run -----------------------------------------------------------------------------


def open_lore(home: Path, url: str = "") -> Any:
    from lore.clock import FixedClock
    from lore.config import load_config
    from lore.runtime import build

    env = {"LORE_HOME": str(home), "LORE_DATABASE_URL": url}
    return build(load_config(env=env, flags={"model": "scripted"}), clock=FixedClock(NOW))


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(","))
    turns, questions = scale.locomo_turns_and_questions()
    questions = questions or [scale.sentence(random.Random(i)) for i in range(200)]
    asked = scale.query_set(questions, args.queries)
    print(f"generating {max(sizes):,} texts…", file=sys.stderr)
    texts = scale.corpus(max(sizes), turns)
    print(f"embedding {args.sample} sample texts for real…", file=sys.stderr)
    base, rates = scale.embed_sample(texts[: args.sample])
    noise = np.random.default_rng(5).normal(0.0, NOISE, base.shape).astype(np.float32)
    result: dict[str, Any] = {"sample": args.sample, "queries": len(asked), "sizes": {}}
    server = None
    url = args.url
    if not url:
        from tests.postgres_server import EmbeddedPostgres

        server = EmbeddedPostgres(settings=SERVER_SETTINGS).start()
        url = server.create_database()
    try:
        with tempfile.TemporaryDirectory(prefix="lore-pg-scale-") as scratch:
            lores = {
                "sqlite": open_lore(Path(scratch) / "sqlite"),
                "postgres": open_lore(Path(scratch) / "postgres", url),
            }
            if args.unpruned:
                lores["unpruned"] = unpruned_lore(Path(scratch) / "unpruned", url)
            done = 0
            for size in sizes:
                adding = texts[done:size]
                row: dict[str, Any] = {}
                print(f"growing both to {size:,} entries (+{len(adding):,})…", file=sys.stderr)
                began = time.perf_counter()
                grow_sqlite(lores["sqlite"], adding, done, base, noise)
                row["sqlite_load_s"] = time.perf_counter() - began
                began = time.perf_counter()
                row.update(grow_postgres(lores["postgres"], adding, done, base, noise))
                row["postgres_load_s"] = time.perf_counter() - began
                done = size
                pruned = pruned_searches(lores["postgres"])
                row.update(time_searches(lores, asked))
                row["pruned"] = pruned_searches(lores["postgres"]) - pruned
                row["text_searches"] = (len(asked) + len(asked[:5])) * 2  # warm-up too
                result["sizes"][size] = row
                print(render_size(size, row), file=sys.stderr)
            for lore in lores.values():
                lore.close()
    finally:
        if server is not None:
            server.stop()
    return result


def unpruned_lore(home: Path, url: str) -> Any:
    """A runtime on the same database whose index ranks every matching entry."""
    from lore.backends.postgres.search_index import PostgresSearchIndex

    lore = open_lore(home, url)
    lore.postgres.search_index = PostgresSearchIndex(lore.postgres.db, common_rows=None)
    return lore


def pruned_searches(lore: Any) -> int:
    return int(lore.postgres.search_index.pruned_searches)


def render_size(size: int, row: dict[str, Any]) -> str:
    lines = [
        f"  {size:,} entries in one conversation (loaded: SQLite {row['sqlite_load_s']:.0f} s;"
        f" PostgreSQL {row['postgres_load_s']:.0f} s = COPY {row['copy_s']:.0f} + insert"
        f" {row['insert_s']:.0f} + GIN {row['gin_s']:.0f} + HNSW {row['hnsw_s']:.0f})"
    ]
    for mode, label in (("hybrid", "hybrid"), ("text", "text only")):
        (p50, p95), (l50, l95) = row[f"postgres_{mode}"], row[f"sqlite_{mode}"]
        lines.append(
            f"    {label:<10} PostgreSQL {p50:7.2f} / {p95:7.2f}   SQLite {l50:7.2f} /"
            f" {l95:7.2f}   ratio p50 {p50 / l50:4.1f}x"
        )
        if f"unpruned_{mode}" in row:
            u50, u95 = row[f"unpruned_{mode}"]
            lines.append(
                f"    {'':<10} PostgreSQL ranking every row {u50:7.2f} / {u95:7.2f}"
                f"   ratio p50 {u50 / l50:4.1f}x SQLite, pruned/every row {p50 / u50:4.2f}x"
            )
    if "pruned" in row:
        lines.append(
            f"    PostgreSQL text searches with common words pruned:"
            f" {row['pruned']} of {row['text_searches']}"
        )
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    lines = [
        f"memory_search p50 / p95 ms, {result['queries']} queries, query embedding included;"
        f" vectors: {result['sample']} real embeddings, the rest those plus noise",
    ]
    lines += [render_size(int(size), row) for size, row in result["sizes"].items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--sample", type=int, default=1000, help="texts embedded for real")
    parser.add_argument("--url", default="", help="an empty PostgreSQL database to fill")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--unpruned", action="store_true", help="also time PostgreSQL ranking every row"
    )
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
