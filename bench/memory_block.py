"""Building the memory block, beside a raw-SQLite baseline measured in the same run.

    python bench/memory_block.py [--rows 1000000] [--scope-rows 10000] [--runs 300] [--json]

The database holds --rows memories over a thousand scopes (some superseded, forgotten,
expired), --scope-rows of them in the benchmarked scope. Budget: p50 ≤ 5 ms. The
baseline is what a hand-written block must ask SQLite for: the ordered rows and the count
of the rest, with no formatting or budgeting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.memory.block import render_memory_block

SCOPE = "cli:default"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
WORDS = (
    "coffee tea Hualien mom dad flight Sunday dinner running piano school office "
    "birthday garden cat dog train Taipei 咖啡 美式 开会 周末 花莲 妈妈 生日"
).split()
KINDS = ("profile", "preference", "fact", "fact", "plan", "relation", "event")


def rows(total: int, in_scope: int, seed: int = 7) -> Iterator[tuple[object, ...]]:
    """Memory rows: every `step`-th one in SCOPE, the rest spread over other scopes."""
    rnd = random.Random(seed)
    step = max(1, total // max(1, in_scope))
    for i in range(1, total + 1):
        scope = SCOPE if i % step == 0 and i // step <= in_scope else f"telegram:{i % 1000}"
        content = f"{i}: " + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 12)))
        updated = NOW - timedelta(minutes=rnd.randint(0, 1_000_000))
        roll = rnd.random()
        status = "active" if roll < 0.9 else "superseded" if roll < 0.98 else "forgotten"
        expires = NOW + timedelta(days=rnd.randint(-30, 30)) if rnd.random() < 0.05 else None
        yield (
            i,
            scope,
            "" if status == "forgotten" else content,
            "profile" if rnd.random() < 0.02 else rnd.choice(KINDS),
            "[]",
            "john",
            updated.isoformat(timespec="microseconds"),
            updated.isoformat(timespec="microseconds"),
            None if expires is None else expires.isoformat(timespec="microseconds"),
            status,
            hashlib.sha256(content.encode()).hexdigest()[:32] if status == "active" else None,
        )


def fill(db: Database, total: int, in_scope: int) -> None:
    sql = (
        "INSERT INTO memories (id, scope, content, kind, keywords, author, created_at,"
        " updated_at, expires_at, status, content_key) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
    )
    batch: list[tuple[object, ...]] = []
    start = time.perf_counter()
    with db.atomic() as conn:
        for done, row in enumerate(rows(total, in_scope), 1):
            batch.append(row)
            if len(batch) == 50_000 or done == total:
                conn.executemany(sql, batch)
                batch.clear()
                print(
                    f"\rfilling {done:,}/{total:,} memories ({done * 100 // total}%)",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    db.checkpoint()
    print(f" in {time.perf_counter() - start:.1f} s", file=sys.stderr)


def baseline(db: Database, limit: int) -> list[object]:
    """What a bare block needs from SQLite: the ordered rows and the count, nothing else."""
    now = NOW.isoformat(timespec="microseconds")
    rows = db.conn.execute(
        "SELECT id, kind, content, author, updated_at FROM memories WHERE scope = ?"
        " AND status = 'active' AND (expires_at IS NULL OR expires_at > ?)"
        " ORDER BY (kind = 'profile') DESC, updated_at DESC, id DESC LIMIT ?",
        (SCOPE, now, limit),
    ).fetchall()
    rows += db.conn.execute(
        "SELECT count(*) FROM memories WHERE scope = ? AND status = 'active'"
        " AND (expires_at IS NULL OR expires_at > ?)",
        (SCOPE, now),
    ).fetchall()
    return rows


def timed(fn: object, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--scope-rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--budget", type=int, default=2000, help="block budget in characters")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    zone = ZoneInfo("Asia/Taipei")

    with tempfile.TemporaryDirectory() as home:
        db = Database(Path(home) / "lore.db")
        fill(db, args.rows, min(args.scope_rows, args.rows))
        store = SQLiteMemoryStore(db)

        def block() -> None:
            render_memory_block(store, SCOPE, budget_chars=args.budget, now=NOW, zone=zone)

        shown = render_memory_block(store, SCOPE, budget_chars=args.budget, now=NOW, zone=zone)
        lines = len(shown.shown_ids)
        ours, raw = [], []
        for _ in range(3):  # interleaved rounds, so drift hits both alike
            ours += timed(block, args.runs // 3)
            raw += timed(lambda: baseline(db, lines), args.runs // 3)
        db.close()

    figures = {
        "rows": args.rows,
        "scope_rows": args.scope_rows,
        "lines_shown": lines,
        "hidden": shown.hidden_count,
        "block_p50_ms": statistics.median(ours),
        "block_p95_ms": statistics.quantiles(ours, n=20)[-1],
        "raw_sqlite_p50_ms": statistics.median(raw),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"memory block ({args.rows:,} memories, {args.scope_rows:,} in scope, "
        f"{lines} shown, {shown.hidden_count:,} not shown)"
    )
    print(
        f"  render_memory_block  p50 {figures['block_p50_ms']:7.3f} ms   "
        f"p95 {figures['block_p95_ms']:7.3f} ms   (budget 5 ms)"
    )
    print(
        f"  baseline: raw SQLite rows + count  p50 {figures['raw_sqlite_p50_ms']:7.3f} ms   "
        f"ratio {figures['block_p50_ms'] / figures['raw_sqlite_p50_ms']:.1f}x"
    )


if __name__ == "__main__":
    main()
