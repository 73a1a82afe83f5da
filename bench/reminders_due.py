"""Finding due reminders among 1,000,000 stored: the (status, due_at) index vs a full scan.

    .venv/bin/python bench/reminders_due.py [--rows 1000000] [--due 100] [--keep DB]

Fills a fresh lore.db (most rows pending in the coming year, a quarter delivered, some
cancelled, `--due` already due), then times, by p50 over many runs: what the scheduler
runs each wake (`next_due_time`, `due`, and `claim_due` with its commit), and the same
query forced to scan the table (`NOT INDEXED`) as the baseline. Budget: ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lore.backends.local.database import Database
from lore.backends.local.reminders import SQLiteReminderStore

BUDGET_MS = 5.0
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
_INSERT = (
    "INSERT INTO reminders (scope, author, text, due_at, timezone, recurrence, anchor_at, "
    "status, created_at, delivered_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
)


def fill(db: Database, rows: int, due: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    now = int(NOW.timestamp())
    chunk = 50_000
    started = time.perf_counter()
    for start in range(0, rows, chunk):
        batch = []
        for i in range(start, min(rows, start + chunk)):
            roll = rng.random()
            if i < due:
                status, due_at = "pending", now - rng.randint(1, 3600)
            elif roll < 0.70:
                status, due_at = "pending", now + rng.randint(60, 365 * 86400)
            elif roll < 0.95:
                status, due_at = "delivered", now - rng.randint(60, 365 * 86400)
            else:
                status, due_at = "cancelled", now + rng.randint(-86400, 86400)
            delivered = due_at if status == "delivered" else None
            recurrence = "daily 09:00" if roll < 0.05 else None
            batch.append(
                (
                    f"line:group:{i % 5000}",
                    "john",
                    f"reminder {i}",
                    due_at,
                    "Asia/Taipei",
                    recurrence,
                    due_at,
                    status,
                    due_at - 600,
                    delivered,
                )
            )
        with db.atomic() as conn:
            conn.executemany(_INSERT, batch)
        done = min(rows, start + chunk)
        rate = done / (time.perf_counter() - started)
        print(
            f"\r  filling: {done:>9,} / {rows:,} rows ({done / rows:4.0%}, {rate:,.0f}/s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    db.conn.execute("ANALYZE")


def p50_ms(
    action: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> tuple[float, float]:
    """(p50, p95) in milliseconds; `before` runs untimed ahead of each run."""
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="reminders stored")
    parser.add_argument("--due", type=int, default=100, help="of which already due")
    parser.add_argument("--runs", type=int, default=200, help="timed runs per indexed query")
    parser.add_argument("--keep", metavar="DB", help="build the database here and keep it")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "lore.db"
        db = Database(path)
        print(f"reminders_due: {args.rows:,} reminders, {args.due} due, in {path}", file=sys.stderr)
        started = time.perf_counter()
        fill(db, args.rows, args.due)
        print(f"  filled in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        store = SQLiteReminderStore(db)

        def query(hint: str) -> Callable[[], object]:
            sql = (
                f"SELECT id, due_at FROM reminders {hint} WHERE status = 'pending' "
                "AND due_at <= ? ORDER BY due_at LIMIT 100"
            )
            return lambda: db.conn.execute(sql, (int(NOW.timestamp()),)).fetchall()

        assert len(store.due(NOW, limit=args.due + 1)) == min(args.due, args.rows)
        next_due = p50_ms(store.next_due_time, args.runs)
        indexed = p50_ms(query(""), args.runs)
        find = p50_ms(lambda: store.due(NOW, limit=100), args.runs)
        baseline = p50_ms(query("NOT INDEXED"), 7)

        batch = [0]

        def add_due() -> None:  # untimed: give each claim a full batch of its own
            batch[0] += 1
            due_at = int((NOW - timedelta(seconds=batch[0])).timestamp())
            row = ("cli:default", "john", "x", due_at, "UTC", None, due_at, "pending", due_at, None)
            with db.atomic() as conn:
                conn.executemany(_INSERT, [row] * args.due)

        store.claim_due(NOW, limit=args.due)  # the initial due rows
        claim = p50_ms(
            lambda: store.claim_due(NOW, limit=args.due), max(20, args.runs // 4), add_due
        )
        db.close()

    print(f"{'query':<40}{'p50 ms':>10}{'p95 ms':>10}")
    for name, (p50, p95) in (
        ("next_due_time (index seek)", next_due),
        ("find due, raw SQL (index)", indexed),
        ("store.due(now): up to 100 reminders", find),
        (f"claim_due(now): {args.due} claimed + commit", claim),
        ("baseline: same find, full scan", baseline),
    ):
        print(f"{name:<40}{p50:>10.3f}{p95:>10.3f}")
    worst = max(next_due[0], indexed[0], find[0], claim[0])
    verdict = "within" if worst <= BUDGET_MS else "OVER"
    print(
        f"Same query: the index is {baseline[0] / indexed[0]:,.0f}x faster than a full scan "
        f"(store.due {baseline[0] / find[0]:,.0f}x, claim_due {baseline[0] / claim[0]:,.0f}x). "
        f"Slowest p50 {worst:.3f} ms: {verdict} the {BUDGET_MS:.0f} ms budget "
        f"at {args.rows:,} rows."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
