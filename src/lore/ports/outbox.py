"""The outbox port: what must reach a person, held until a channel has delivered it.

Delivery is claim (a lease) → deliver with the item's idempotency key → mark done. A
process killed between claim and done loses nothing: its lease runs out and another
process (or the same one, restarted) delivers the item; the key keeps the conversation
from seeing it twice. A failed delivery is retried with backoff and, after too many
attempts, stays visible as failed.

Times are kept to the whole second (an item is ready from the second it was put or
retried for); leases run to the fraction. Only the owner holding a lease can finish,
release or retry the item: from anyone else these change nothing. The suite in
tests/contract/test_outbox_contract.py holds every backend to this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

__all__ = ["MAX_ATTEMPTS", "Outbox", "OutboxItem", "map_strings"]

MAX_ATTEMPTS = 8  # then the item is marked failed, and shown as such


@dataclass(frozen=True)
class OutboxItem:
    id: int
    key: str  # idempotency key: one delivery per key, ever
    scope: str
    channel: str  # the channel the item came from ('' when unknown)
    kind: str  # 'reminder'
    payload: dict[str, Any]
    status: str  # pending | delivered | failed
    attempts: int
    created_at: datetime
    last_error: str = ""


class Outbox(Protocol):
    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every string of every item that `match`es through `redact` (forget
        everywhere); how many items (would) change."""

    def put(self, item: OutboxItem, *, now: datetime) -> bool:
        """Queue an item, pending from `now` (its `id`, status, attempts and created_at
        are ignored); False when an item with its key was ever queued before, whatever
        became of it."""

    def lease(
        self,
        *,
        owner: str,
        now: datetime,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
        seconds: float = 60.0,
    ) -> list[OutboxItem]:
        """Claim ready items (of these scopes, or any), oldest first, for `seconds`: items
        pending, past their retry delay and under no lease that still runs (not even one
        `owner` holds)."""

    def done(self, item_id: int, *, owner: str, now: datetime) -> bool:
        """Mark delivered; False when `owner` does not hold it (another owner took over
        after the lease ran out, or it was done already)."""

    def release(self, item_id: int, *, owner: str) -> None:
        """Give a leased item back untried (a delivery stopped before it began)."""

    def end_leases(self, owners: Sequence[str]) -> int:
        """The leases these owners hold on pending items run out now (their processes
        have ended: `lore.lease_holder`); how many."""

    def retry(self, item_id: int, *, owner: str, now: datetime, error: str, delay: float) -> None:
        """Give the item back after a failed delivery, ready again after `delay` seconds;
        after MAX_ATTEMPTS it is marked failed."""

    def ready_scopes(self, now: datetime) -> list[str]:
        """Scopes with items ready to lease now."""

    def next_ready(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending item (of one scope) becomes ready (leases included)."""

    def items(self, scope: str, *, status: str | None = None, limit: int = 100) -> list[OutboxItem]:
        """A scope's items, newest first (what `lore remind list` shows of deliveries)."""


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A JSON value with every string in it, at any depth, passed through `change` (how
    forget everywhere rewrites a stored payload)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    return value
