"""What `GET /metrics` reports: counters and latency histograms this process keeps as
plain numbers, so the turn, the tools, search and delivery pay a dictionary update and
never an import; the gateway writes them out in Prometheus' text format (with
prometheus-client) only when they are scraped.

Every metric is declared once in `DECLARED`, with its kind and help text: a name used
without a declaration is a programming error, caught by the tests.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["BUCKETS", "DECLARED", "METRICS", "Histogram", "Metrics"]

Kind = Literal["counter", "histogram"]

# Seconds: from a search (milliseconds) to a slow model's reply (minutes).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

DECLARED: Mapping[str, tuple[Kind, str]] = {
    "lore_turns": ("counter", "Turns run, by channel and outcome (ok, failed, cancelled)."),
    "lore_turn_seconds": ("histogram", "Wall time of a turn, the model's reply included."),
    "lore_tool_calls": ("counter", "Tool calls, by tool and outcome (ok, error)."),
    "lore_reminders_delivered": ("counter", "Reminder occurrences delivered, by lateness."),
    "lore_reminder_failures": ("counter", "Reminder deliveries that failed (retried later)."),
    "lore_channel_errors": (
        "counter",
        "Errors talking to a chat platform, by channel and what failed (receive, send, turn).",
    ),
    "lore_channel_statuses": (
        "counter",
        "Delivery statuses a chat platform reported for Lore's messages (sent, delivered, "
        "read, failed), by channel.",
    ),
    "lore_searches": ("counter", "Searches, by mode (hybrid, text, vector)."),
    "lore_search_seconds": ("histogram", "Wall time of a search, by mode."),
}

Labels = tuple[tuple[str, str], ...]


@dataclass
class Histogram:
    """Counts per bucket (cumulative when read out), their sum and how many."""

    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    total: float = 0.0
    count: int = 0

    def observe(self, seconds: float) -> None:
        at = bisect.bisect_left(BUCKETS, seconds)
        if at < len(BUCKETS):
            self.buckets[at] += 1
        self.total += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """(upper bound, observations at or below it), ending with +Inf."""
        running, out = 0, []
        for bound, n in zip(BUCKETS, self.buckets, strict=True):
            running += n
            out.append((repr(bound), running))
        out.append(("+Inf", self.count))
        return out


class Metrics:
    """One process's figures; safe to update from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, Labels], float] = {}
        self._histograms: dict[tuple[str, Labels], Histogram] = {}

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = (_declared(name, "counter"), tuple(sorted(labels.items())))
        with self._lock:
            self._counters[key] = self._counters.get(key, 0.0) + amount

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        key = (_declared(name, "histogram"), tuple(sorted(labels.items())))
        with self._lock:
            self._histograms.setdefault(key, Histogram()).observe(max(0.0, seconds))

    def counters(self) -> dict[tuple[str, Labels], float]:
        with self._lock:
            return dict(self._counters)

    def histograms(self) -> dict[tuple[str, Labels], Histogram]:
        with self._lock:
            return {
                key: Histogram(list(h.buckets), h.total, h.count)
                for key, h in self._histograms.items()
            }


def _declared(name: str, kind: Kind) -> str:
    declared = DECLARED.get(name)
    if declared is None or declared[0] != kind:
        raise KeyError(f"{name} is not a declared {kind} (lore.metrics.DECLARED)")
    return name


METRICS = Metrics()  # the process's
