"""`remember`, committed and searchable, beside a raw-SQLite baseline in the same run.

    python bench/remember.py [--rows 100000] [--runs 500] [--json]

The database first holds --rows indexed memories. Each `remember` validates, scans for
secrets, checks for a duplicate, tokenises (jieba for Chinese), writes the row, its
index entry and its audit entry, and commits. Budget: p50 ≤ 2 ms. The baseline commits
the same row and the same pre-computed index terms with bare INSERTs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from lore import text
from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore

SCOPE = "cli:default"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ENGLISH = "John walks the dog along the river every Sunday morning, note {}"
CHINESE = "我每天早上喝一杯美式咖啡，周末去花莲看妈妈，第{}条"


def sample(i: int) -> str:
    return (CHINESE if i % 2 else ENGLISH).format(i)


def fill(db: Database, total: int) -> None:
    memories = (
        "INSERT INTO memories (id, scope, content, kind, author, created_at, updated_at,"
        " content_key) VALUES (?, ?, ?, 'fact', 'john', ?, ?, ?)"
    )
    index = "INSERT INTO memory_fts (rowid, scope_tag, words, grams) VALUES (?, ?, ?, ?)"
    at = NOW.isoformat(timespec="microseconds")
    start = time.perf_counter()
    with db.atomic() as conn:
        for first in range(1, total + 1, 20_000):
            ids = range(first, min(first + 20_000, total + 1))
            batch = [(i, f"{i} " + sample(i)) for i in ids]
            conn.executemany(
                memories, [(i, f"telegram:{i % 1000}", c, at, at, f"k{i}") for i, c in batch]
            )
            terms = [(i, text.index_terms(c)) for i, c in batch]
            conn.executemany(index, [(i, f"scope{i % 1000}", t.words, t.grams) for i, t in terms])
            print(
                f"\rfilling {ids[-1]:,}/{total:,} indexed memories ({ids[-1] * 100 // total}%)",
                end="",
                file=sys.stderr,
                flush=True,
            )
    db.checkpoint()
    print(f" in {time.perf_counter() - start:.1f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home:
        start = time.perf_counter()
        text.warm_up()
        jieba_ms = (time.perf_counter() - start) * 1000
        db = Database(Path(home) / "lore.db")
        fill(db, args.rows)
        store = SQLiteMemoryStore(db)

        ours: list[float] = []
        raw: list[float] = []
        for i in range(args.runs):
            content = f"#{i} " + sample(i)
            start = time.perf_counter()
            store.remember(
                SCOPE, content, keywords=["提神", "coffee"], author="john", via="tool", now=NOW
            )
            ours.append((time.perf_counter() - start) * 1000)

            raw_content = f"raw #{i} " + sample(i)
            terms = text.index_terms(raw_content)  # tokenising is not part of the baseline
            at = NOW.isoformat(timespec="microseconds")
            start = time.perf_counter()
            with db.atomic() as conn:
                cursor = conn.execute(
                    "INSERT INTO memories (scope, content, kind, author, created_at,"
                    " updated_at, content_key) VALUES ('raw', ?, 'fact', 'john', ?, ?, ?)",
                    (raw_content, at, at, f"raw{i}"),
                )
                conn.execute(
                    "INSERT INTO memory_fts (rowid, scope_tag, words, grams) VALUES (?,?,?,?)",
                    (cursor.lastrowid, "scoperaw", terms.words, terms.grams),
                )
            raw.append((time.perf_counter() - start) * 1000)

        searchable = sum(
            bool(store.search(SCOPE, f"第{i}条" if i % 2 else f"note {i}", now=NOW))
            for i in range(0, args.runs, max(1, args.runs // 50))
        )
        db.close()

    figures = {
        "rows": args.rows,
        "remember_p50_ms": statistics.median(ours),
        "remember_p95_ms": statistics.quantiles(ours, n=20)[-1],
        "raw_sqlite_p50_ms": statistics.median(raw),
        "jieba_load_ms": jieba_ms,
        "searchable_checked": searchable,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"remember, committed and searchable ({args.rows:,} indexed memories already)")
    print(
        f"  MemoryStore.remember  p50 {figures['remember_p50_ms']:7.3f} ms   "
        f"p95 {figures['remember_p95_ms']:7.3f} ms   (budget 2 ms)"
    )
    print(
        f"  baseline: raw SQLite insert + index + commit  p50 "
        f"{figures['raw_sqlite_p50_ms']:7.3f} ms   "
        f"ratio {figures['remember_p50_ms'] / figures['raw_sqlite_p50_ms']:.1f}x"
    )
    print(
        f"  (one-time jieba dictionary load: {jieba_ms:.0f} ms; "
        f"{searchable} sampled memories all found by search afterwards)"
    )


if __name__ == "__main__":
    main()
