"""How an outbox keeps deliveries, the same on every store: times are aware and kept to
the whole second (leases to the fraction); a lease is (owner, until), and only the owner
still holding it can finish, release or retry the item; a failed delivery waits `delay`
seconds and fails for good after MAX_ATTEMPTS; one item per key, ever. What a payload
is as stored (a JSON object) is decided here, in `stored_payload` and `stored_item`.

A store subclasses `OutboxFlow` and gives the SQL as hooks (its transactions, its
placeholders, how it skips rows another worker holds).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from lore.backends.stored_time import whole_second
from lore.ports.outbox import (
    MAX_ATTEMPTS,
    OutboxItem,
    OutboxStatus,
    Payload,
    map_strings,
    payload_to_json,
)

__all__ = ["NewItem", "OutboxFlow", "Row", "stored_item", "stored_payload"]

Conn = TypeVar("Conn")
# What a store inserts for one item: key, scope, channel, kind, payload as stored.
NewItem = tuple[str, str, str, str, dict[str, Any]]


class OutboxFlow(ABC, Generic[Conn]):
    """The flow of an outbox over connections of type `Conn`."""

    redacted_noun = "delivery"  # forget everywhere's word for one

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every string of every item that `match`es through `redact` (forget
        everywhere); how many items (would) change."""
        with self._reading() as conn:
            rows = self._texts(conn)
        changed = [
            (item_id, map_strings(payload, redact), redact(error) if error else error)
            for item_id, payload, error in rows
            if match(json.dumps(payload, ensure_ascii=False)) or match(error or "")
        ]
        if changed and not dry_run:
            with self._writing() as conn:
                self._rewrite(conn, changed)
        return len(changed)

    def put(self, item: OutboxItem, *, now: datetime) -> bool:
        """Queue an item; False when an item with its key was queued before."""
        with self._writing() as conn:
            return self.put_all_in(conn, [item], now=now) == 1

    def put_all_in(self, conn: Conn, items: Sequence[OutboxItem], *, now: datetime) -> int:
        """Queue items inside a transaction the caller holds (a reminder claim); keys
        queued before are skipped. How many were queued."""
        at = _second(now)
        if not items:
            return 0
        rows = [(i.key, i.scope, i.channel, i.kind, stored_payload(i)) for i in items]
        return self._insert(conn, rows, at)

    def lease(
        self,
        *,
        owner: str,
        now: datetime,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
        seconds: float = 60.0,
    ) -> list[OutboxItem]:
        """Claim ready items (of these scopes, or any), oldest first, for `seconds`."""
        _second(now)
        if scopes is not None and not scopes:
            return []
        until = now + timedelta(seconds=seconds)
        with self._leasing() as conn:
            leased = self._lease(conn, owner, now, until, scopes, limit)
        return sorted(leased, key=lambda item: item.id)

    def done(self, item_id: int, *, owner: str, now: datetime) -> bool:
        """Mark delivered; False when the lease was lost (another owner took over)."""
        at = _second(now)
        with self._writing() as conn:
            return self._finish(conn, item_id, owner, at)

    def release(self, item_id: int, *, owner: str) -> None:
        """Give a leased item back untried (a delivery stopped before it began)."""
        with self._writing() as conn:
            self._release(conn, item_id, owner)

    def end_leases(self, owners: Sequence[str]) -> int:
        """The leases these owners hold on pending items run out now; how many."""
        if not owners:
            return 0
        with self._writing() as conn:
            return self._free_owners(conn, owners)

    def retry(self, item_id: int, *, owner: str, now: datetime, error: str, delay: float) -> None:
        """Give the item back after a failed delivery, ready again after `delay` whole
        seconds; after MAX_ATTEMPTS it is marked failed."""
        ready = _second(now) + timedelta(seconds=int(delay))
        with self._writing() as conn:
            self._retry(conn, item_id, owner, error[:500], ready, MAX_ATTEMPTS)

    def ready_scopes(self, now: datetime) -> list[str]:
        """Scopes with items ready to lease now."""
        _second(now)
        with self._reading() as conn:
            return self._ready_scopes(conn, now)

    def next_ready(self, scope: str | None = None) -> datetime | None:
        """When the soonest pending item (of one scope) becomes ready (leases included)."""
        with self._reading() as conn:
            return self._next_ready(conn, scope)

    def items(
        self, scope: str, *, status: OutboxStatus | None = None, limit: int = 100
    ) -> list[OutboxItem]:
        """A scope's items, newest first."""
        with self._reading() as conn:
            return self._items(conn, scope, status, limit)

    def pending(self) -> int:
        """How many items are still to deliver, in every scope."""
        with self._reading() as conn:
            return self._pending(conn)

    # -- the SQL each store gives -----------------------------------------------------------

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Conn]:
        """One write transaction."""

    def _leasing(self) -> AbstractContextManager[Conn]:
        """The transaction of a lease (by default `_writing`'s)."""
        return self._writing()

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Conn]:
        """A connection to read from."""

    @abstractmethod
    def _insert(self, conn: Conn, rows: Sequence[NewItem], at: datetime) -> int:
        """Add pending items, created and available at `at`, skipping known keys; how many."""

    @abstractmethod
    def _lease(
        self,
        conn: Conn,
        owner: str,
        now: datetime,
        until: datetime,
        scopes: Sequence[str] | None,
        limit: int,
    ) -> list[OutboxItem]:
        """Lease to `owner` until `until` the oldest `limit` items that are pending,
        available at `now` and under no lease running at `now` (of `scopes`, if given)."""

    @abstractmethod
    def _finish(self, conn: Conn, item_id: int, owner: str, at: datetime) -> bool:
        """Mark the item delivered, if it is pending and `owner` holds it."""

    @abstractmethod
    def _release(self, conn: Conn, item_id: int, owner: str) -> None:
        """End `owner`'s lease on the item, if it is pending."""

    @abstractmethod
    def _free_owners(self, conn: Conn, owners: Sequence[str]) -> int:
        """End every lease these owners hold on pending items; how many."""

    @abstractmethod
    def _retry(
        self,
        conn: Conn,
        item_id: int,
        owner: str,
        error: str,
        ready: datetime,
        max_attempts: int,
    ) -> None:
        """If `owner` holds the pending item: one attempt more, `error` kept, ready again
        at `ready`, lease ended; failed once it has had `max_attempts`."""

    @abstractmethod
    def _ready_scopes(self, conn: Conn, now: datetime) -> list[str]:
        """The scopes with an item ready to lease at `now`."""

    @abstractmethod
    def _next_ready(self, conn: Conn, scope: str | None) -> datetime | None:
        """The soonest moment a pending item (of `scope`) is available and unleased."""

    @abstractmethod
    def _items(
        self, conn: Conn, scope: str, status: OutboxStatus | None, limit: int
    ) -> list[OutboxItem]:
        """The scope's items (of `status`, if given), newest first."""

    @abstractmethod
    def _pending(self, conn: Conn) -> int:
        """How many items are pending."""

    @abstractmethod
    def _texts(self, conn: Conn) -> list[tuple[int, Any, str | None]]:
        """(id, payload as stored: a JSON value, or the text of one that is not JSON,
        last error) of every item."""

    @abstractmethod
    def _rewrite(self, conn: Conn, changed: Sequence[tuple[int, Any, str | None]]) -> None:
        """Store these (id, payload as `_texts` gave it, redacted; last error)."""


def stored_payload(item: OutboxItem) -> dict[str, Any]:
    """The item's payload as every store keeps it: a JSON object (an unreadable payload
    is never written anew)."""
    return payload_to_json(item.payload)


def _second(moment: datetime) -> datetime:
    return whole_second(moment, "outbox")


class Row(Protocol):
    """A stored row, read by column name (sqlite3.Row, psycopg's dict rows)."""

    def __getitem__(self, column: str, /) -> Any: ...


def stored_item(row: Row, *, payload: Payload, created_at: datetime) -> OutboxItem:
    """An item from a stored row (id, key, scope, channel, kind, status, attempts,
    last_error), its payload as read back (`payload_from_text`, `payload_from_json`) and
    its creation time."""
    return OutboxItem(
        id=int(row["id"]),
        key=row["key"],
        scope=row["scope"],
        channel=row["channel"],
        kind=row["kind"],
        payload=payload,
        status=row["status"],
        attempts=int(row["attempts"]),
        created_at=created_at,
        last_error=row["last_error"] or "",
    )
