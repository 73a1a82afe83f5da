"""The PostgreSQL backend beside the SQLite one, in the same run, on the same data.

    .venv/bin/python bench/postgres.py [--rows 10000] [--runs 300] [--reminders 2000]
                                       [--workers 4] [--url postgresql://...]
                                       [--search 100000,300000] [--queries 200]

Starts the embedded PostgreSQL of the tests (or uses --url, whose tables it fills), then
for each backend: fills --rows memories over 100 scopes (half English, half Chinese),
times `remember` (committed) and `search` in one scope (p50, p95), and claims
--reminders due reminders, delivering each through the outbox: SQLite with one worker,
PostgreSQL with --workers threads at once (each its own connection), counting
duplicates and misses. Each PostgreSQL figure is printed beside SQLite's as a ratio.

With --search N,M,...: for each size, the index of `bench/search_latency.py` (N synthetic
entries in one scope, English-like and Chinese, each with a random unit vector) is built
in SQLite and in PostgreSQL, and `memory_search`'s path (`LoreSearch.search`, query
embedding included) is timed in hybrid and text-only modes on both; on PostgreSQL once
more with the HNSW index dropped (an exact scan), to show what the index buys. Build
times are printed too (they tell how long a larger size would take).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.postgres_server

from lore import text  # noqa: E402
from lore.backends.local.database import Database  # noqa: E402
from lore.backends.local.memories import SQLiteMemoryStore  # noqa: E402
from lore.backends.local.reminders import SQLiteReminderStore  # noqa: E402
from lore.backends.postgres.database import PostgresDatabase  # noqa: E402
from lore.backends.postgres.memories import PostgresMemoryStore  # noqa: E402
from lore.backends.postgres.reminders import PostgresReminderStore  # noqa: E402

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ENGLISH = "John walks the dog along the river every Sunday morning, note {}"
CHINESE = "我每天早上喝一杯美式咖啡，周末去花莲看妈妈，第{}条"
QUERIES = ["river dog", "美式咖啡", "花莲", "Sunday morning", "妈妈"]


def sample(i: int) -> str:
    return (CHINESE if i % 2 else ENGLISH).format(i)


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


def timed(runs: int, call: Callable[[int], object]) -> tuple[float, float]:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


def memories(store: Any, rows: int, runs: int) -> dict[str, tuple[float, float]]:
    with store.batch():
        for i in range(rows):
            store.remember(f"telegram:{i % 100}", sample(i), author="john", via="cli", now=NOW)
    remember = timed(
        runs,
        lambda i: store.remember("cli:default", f"new {sample(i)}", author="j", via="cli", now=NOW),
    )
    search = timed(runs, lambda i: store.search("telegram:7", QUERIES[i % len(QUERIES)], now=NOW))
    return {"remember": remember, "search": search}


def reminders(make_store: Callable[[], Any], count: int, workers: int) -> tuple[float, int, int]:
    """Seconds to claim and deliver `count` due reminders; duplicates; misses."""
    seed = make_store()
    for n in range(count):
        seed.add(f"telegram:{n % 100}", "john", f"reminder {n}", NOW + timedelta(seconds=n % 60),
                 timezone="Asia/Taipei", now=NOW)  # fmt: skip
    due = NOW + timedelta(minutes=1)
    delivered: list[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        store = make_store() if workers > 1 else seed
        while store.claim_due(due, limit=50):
            pass
        while items := store.outbox.lease(owner=f"w{n}", now=due, limit=50):
            for item in items:
                if store.outbox.done(item.id, owner=f"w{n}", now=due):
                    with lock:
                        delivered.append(item.key)
        while store.claim_due(due, limit=50):  # what others left when this one started
            pass

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    counts = Counter(delivered)
    return seconds, sum(c - 1 for c in counts.values()), count - len(counts)


def search_sizes(
    sizes: list[int], queries: int, new_url: Callable[[], str]
) -> list[dict[str, Any]]:
    """memory_search p50/p95 at each size, SQLite beside PostgreSQL (with and without HNSW)."""
    import search_latency as bench  # bench/search_latency.py, beside this file
    from lore.search import searcher

    rows = []
    for size in sizes:
        texts, words = bench.corpus(size)
        asked = bench.queries(words, queries)
        row: dict[str, Any] = {"entries": size}
        for name, url in (("sqlite", ""), ("postgres", new_url())):
            with tempfile.TemporaryDirectory(prefix="lore-search-") as home:
                began = time.perf_counter()
                if url:
                    lore = build_postgres(bench, Path(home), texts, url, row)
                else:
                    lore = bench.build(Path(home), texts, progress=True)
                row[f"{name}_build_s"] = time.perf_counter() - began
                search = searcher(lore)
                now = lore.clock.now()

                def hybrid(q: str, search: Any = search, now: Any = now) -> object:
                    return search.search(q, bench.SCOPE, limit=10, now=now)

                def text_only(q: str, search: Any = search, now: Any = now) -> object:
                    return search.search(q, bench.SCOPE, limit=10, now=now, mode="text")

                row[f"{name}_hybrid"] = percentiles(bench.timed(hybrid, asked))
                row[f"{name}_text"] = percentiles(bench.timed(text_only, asked))
                if name == "postgres":
                    embedder = search.index.embedder

                    def embed(q: str, embedder: Any = embedder) -> object:
                        return embedder.embed_queries([q])

                    row["embedding"] = percentiles(bench.timed(embed, asked))
                    with lore.postgres.db.atomic() as conn:
                        conn.execute("DROP INDEX search_entries_embedding")
                    row["postgres_exact"] = percentiles(bench.timed(hybrid, asked))
                lore.close()
        rows.append(row)
    return rows


def build_postgres(bench: Any, home: Path, texts: list[str], url: str, row: dict[str, Any]) -> Any:
    """The index of `bench.build` in PostgreSQL, loaded as a bulk import would be: the
    HNSW index dropped while the vectors are written, then built once over all of them
    (one insert into the graph per row costs milliseconds; a build of the whole graph
    in memory, a fraction of that), and the table analysed, as autovacuum would soon."""
    from lore.config import load_config
    from lore.runtime import build

    env = {"LORE_HOME": str(home), "LORE_DATABASE_URL": url}
    opened = build(load_config(env=env, flags={"model": "scripted"}))
    assert opened.postgres is not None
    db = opened.postgres.db
    with db.atomic() as conn:
        conn.execute("DROP INDEX search_entries_embedding")
    opened.close()
    lore = bench.build(home, texts, progress=True, database_url=url)
    began = time.perf_counter()
    with lore.postgres.db.atomic() as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX search_entries_embedding ON search_entries"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        conn.execute("ANALYZE search_entries")
    row["hnsw_build_s"] = time.perf_counter() - began
    return lore


def render_search(rows: list[dict[str, Any]], queries: int) -> str:
    lines = [f"memory_search, {queries} queries, p50 / p95 ms (query embedding included)"]
    for row in rows:
        lines.append(
            f"  {row['entries']:,} entries (built in {row['postgres_build_s']:.0f} s on"
            f" PostgreSQL, HNSW {row['hnsw_build_s']:.0f} s of it;"
            f" {row['sqlite_build_s']:.0f} s on SQLite;"
            f" query embedding p50 {row['embedding'][0]:.2f} ms)"
        )
        for mode, label in (("hybrid", "hybrid"), ("text", "text only")):
            (p50, p95), (l50, l95) = row[f"postgres_{mode}"], row[f"sqlite_{mode}"]
            lines.append(
                f"    {label:<22} PostgreSQL {p50:7.2f} / {p95:7.2f}   SQLite {l50:7.2f} /"
                f" {l95:7.2f}   ratio p50 {p50 / l50:4.1f}x"
            )
        (p50, p95), (h50, _) = row["postgres_exact"], row["postgres_hybrid"]
        lines.append(
            f"    {'hybrid without HNSW':<22} PostgreSQL {p50:7.2f} / {p95:7.2f}"
            f"   (exact scan; {p50 / h50:4.1f}x the HNSW p50)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--reminders", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--url", default="")
    parser.add_argument(
        "--search", default="", metavar="N,M", help="memory_search at these index sizes"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only-search", action="store_true", help="skip the store figures")
    args = parser.parse_args()
    sizes = [int(n.replace("_", "")) for n in args.search.split(",") if n.strip()]
    text.warm_up()

    server = None
    url = args.url
    if not url:
        from tests.postgres_server import EmbeddedPostgres

        server = EmbeddedPostgres().start()
        url = server.create_database()
    pools: list[PostgresDatabase] = []
    searched: list[dict[str, Any]] = []
    try:
        if sizes:
            new_url = (lambda: args.url) if args.url else server.create_database  # type: ignore[union-attr]
            searched = search_sizes(sizes, args.queries, new_url)
        if args.only_search:
            print(render_search(searched, args.queries))
            return
        with tempfile.TemporaryDirectory() as home:
            lite_db = Database(Path(home) / "lore.db")
            lite = memories(SQLiteMemoryStore(lite_db), args.rows, args.runs)
            lite_rem = reminders(lambda: SQLiteReminderStore(lite_db), args.reminders, 1)
            lite_db.close()

        def pg_store() -> PostgresReminderStore:
            pools.append(PostgresDatabase(url, max_size=2))
            return PostgresReminderStore(pools[-1])

        pg_db = PostgresDatabase(url)
        pools.append(pg_db)
        pg = memories(PostgresMemoryStore(pg_db), args.rows, args.runs)
        pg_rem = reminders(pg_store, args.reminders, args.workers)
    finally:
        for pool in pools:
            pool.close()
        if server is not None:
            server.stop()

    print(f"{args.rows:,} memories in 100 scopes; {args.runs} runs each")
    for name in ("remember", "search"):
        (p50, p95), (l50, l95) = pg[name], lite[name]
        print(
            f"  {name:<9} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms   SQLite p50 {l50:6.2f} ms"
            f"  p95 {l95:6.2f} ms   ratio p50 {p50 / l50:4.1f}x"
        )
    seconds, duplicates, misses = pg_rem
    lite_seconds, lite_duplicates, lite_misses = lite_rem
    print(
        f"{args.reminders:,} due reminders claimed and delivered through the outbox:\n"
        f"  PostgreSQL, {args.workers} workers: {seconds:5.2f} s"
        f" ({args.reminders / seconds:,.0f}/s), {duplicates} duplicates, {misses} misses\n"
        f"  SQLite, 1 worker:       {lite_seconds:5.2f} s"
        f" ({args.reminders / lite_seconds:,.0f}/s), {lite_duplicates} duplicates,"
        f" {lite_misses} misses   ratio {seconds / lite_seconds:4.1f}x"
    )
    if searched:
        print(render_search(searched, args.queries))


if __name__ == "__main__":
    main()
