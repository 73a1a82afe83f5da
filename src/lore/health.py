"""What `GET /health` says beyond "up": the state each part of `lore serve` last reported
(a chat channel connected or retrying, the lateness of the last reminder delivered, the
embedding backlog as the embedding loop last counted it). Parts report as they work, so
answering reads memory only: never the database, which may be the thing that is down.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HEALTH", "Health"]


@dataclass
class Health:
    """One process's last reports; safe to update from any thread."""

    channels: dict[str, str] = field(default_factory=dict)  # name -> "connected", "retrying: …"
    reminder_lateness: float | None = None  # seconds past due, of the last one delivered
    reminder_delivered_at: float | None = None  # when (epoch seconds)
    embedding_backlog: int | None = None  # entries without a vector, at the last count
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def channel(self, name: str, state: str) -> None:
        with self._lock:
            self.channels[name] = state

    def delivered(self, lateness: float) -> None:
        with self._lock:
            self.reminder_lateness = max(0.0, lateness)
            self.reminder_delivered_at = time.time()

    def backlog(self, entries: int) -> None:
        with self._lock:
            self.embedding_backlog = entries

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            delivered = self.reminder_delivered_at
            return {
                "channels": dict(self.channels),
                "reminders": {
                    "last_lateness_seconds": None
                    if self.reminder_lateness is None
                    else round(self.reminder_lateness, 3),
                    "last_delivered_at": None if delivered is None else round(delivered, 3),
                },
                "embedding_backlog": self.embedding_backlog,
            }


HEALTH = Health()  # the process's
