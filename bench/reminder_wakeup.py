"""How late a reminder arrives when another process adds it 3 s before it is due: with the
doorbell that wakes a running scheduler, beside the same scheduler polling, in one run.

    python bench/reminder_wakeup.py [--reminders 5] [--poll 10] [--json]

A scheduler runs in this process on a fresh home (SQLite), sleeping up to `--poll`
seconds between looks, as `lore serve` does with `reminders.poll_seconds`. For each
reminder, `lore remind add` runs as a separate process with a due time 3 s ahead;
lateness is delivery time minus due time. First with the doorbell (`lore remind add`
rings it), then with the doorbell off (the baseline: the reminder waits for the poll).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lore.backends.local.database import Database
from lore.backends.local.doorbell import Doorbell
from lore.backends.local.reminders import SQLiteReminderStore
from lore.clock import SystemClock
from lore.reminders.delivery import Delivery
from lore.reminders.scheduler import Scheduler

LEAD_SECONDS = 3.0


async def _run(home: Path, reminders: int, poll: float, label: str) -> list[float]:
    db = Database(home / "lore.db")
    store = SQLiteReminderStore(db)
    late: list[float] = []
    arrived = asyncio.Event()

    async def deliver(due: Delivery) -> None:
        late.append((datetime.now(UTC) - due.due_at).total_seconds())
        arrived.set()

    scheduler = Scheduler(store, SystemClock(), deliver, max_sleep=poll)
    running = asyncio.create_task(scheduler.run_forever())
    await asyncio.sleep(0.5)
    try:
        for number in range(reminders):
            arrived.clear()
            due = datetime.now(UTC) + timedelta(seconds=LEAD_SECONDS)
            command = [sys.executable, "-m", "lore", "remind", "add", f"{label} {number}",
                       "--when", due.isoformat(), "--home", str(home)]  # fmt: skip
            added = await asyncio.to_thread(
                subprocess.run, command, capture_output=True, text=True, env=dict(os.environ)
            )
            if added.returncode != 0:
                raise SystemExit(added.stderr)
            await asyncio.wait_for(arrived.wait(), timeout=poll + 30)
            print(f"  {label} {number + 1}/{reminders}: {late[-1]:.2f} s late", file=sys.stderr)
    finally:
        scheduler.stop()
        await running
        store.close()
        db.close()
    return late


def _summary(late: list[float]) -> dict[str, float]:
    return {"mean": statistics.mean(late), "max": max(late)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reminders", type=int, default=5, help="reminders in each phase")
    parser.add_argument("--poll", type=float, default=10.0, help="the scheduler's longest sleep")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        woken = asyncio.run(_run(Path(tmp) / "bell", args.reminders, args.poll, "doorbell"))
        start = Doorbell.start
        Doorbell.start = lambda self: False  # type: ignore[method-assign]
        try:
            polled = asyncio.run(_run(Path(tmp) / "poll", args.reminders, args.poll, "poll"))
        finally:
            Doorbell.start = start  # type: ignore[method-assign]
    figures: dict[str, Any] = {
        "lead_seconds": LEAD_SECONDS,
        "poll_seconds": args.poll,
        "doorbell": _summary(woken),
        "poll_only": _summary(polled),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"Lateness of a reminder another process adds {LEAD_SECONDS:.0f} s before it is due")
    print(f"{'':14} {'mean s':>8} {'max s':>8}")
    for name, row in (("doorbell", figures["doorbell"]), ("poll only", figures["poll_only"])):
        print(f"{name:14} {row['mean']:>8.2f} {row['max']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
