"""The outbox in a dict: leases as (owner, until), one item per idempotency key, ever.
The rules are the flow's (`OutboxFlow`), as on every database; only the storage is a
dict."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from lore.backends.outbox_flow import NewItem, OutboxFlow
from lore.ports.outbox import OutboxItem, OutboxStatus, payload_from_json, payload_to_json

__all__ = ["FakeOutbox"]


@dataclass
class _Slot:
    item: OutboxItem
    available_at: datetime
    lease_owner: str | None = None
    lease_until: datetime | None = None

    def ready(self, now: datetime) -> bool:
        return (
            self.item.status == "pending"
            and self.available_at <= now
            and (self.lease_until is None or self.lease_until < now)
        )

    def held_by(self, owner: str) -> bool:
        return self.item.status == "pending" and self.lease_owner == owner

    def free(self) -> None:
        self.lease_owner, self.lease_until = None, None


@dataclass
class _Table:
    slots: dict[int, _Slot] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)


class FakeOutbox(OutboxFlow[_Table]):
    def __init__(self) -> None:
        self._table = _Table()
        self._lock = threading.RLock()

    @contextmanager
    def _writing(self) -> Iterator[_Table]:
        with self._lock:
            yield self._table

    def _reading(self) -> AbstractContextManager[_Table]:
        return nullcontext(self._table)

    def _insert(self, conn: _Table, rows: Sequence[NewItem], at: datetime) -> int:
        added = 0
        for key, scope, channel, kind, payload in rows:
            if key in conn.keys:
                continue
            item_id = len(conn.slots) + 1
            stored = payload_from_json(copy.deepcopy(payload))  # as a database keeps it
            item = OutboxItem(item_id, key, scope, channel, kind, stored, "pending", 0, at)
            conn.slots[item_id] = _Slot(item, at)
            conn.keys.add(key)
            added += 1
        return added

    def _lease(
        self,
        conn: _Table,
        owner: str,
        now: datetime,
        until: datetime,
        scopes: Sequence[str] | None,
        limit: int,
    ) -> list[OutboxItem]:
        leased: list[OutboxItem] = []
        for slot in conn.slots.values():
            if len(leased) >= limit:
                break
            if slot.ready(now) and (scopes is None or slot.item.scope in scopes):
                slot.lease_owner, slot.lease_until = owner, until
                leased.append(slot.item)
        return leased

    def _finish(self, conn: _Table, item_id: int, owner: str, at: datetime) -> bool:
        slot = conn.slots.get(item_id)
        if slot is None or not slot.held_by(owner):
            return False
        slot.item = replace(slot.item, status="delivered")
        slot.free()
        return True

    def _release(self, conn: _Table, item_id: int, owner: str) -> None:
        slot = conn.slots.get(item_id)
        if slot is not None and slot.held_by(owner):
            slot.free()

    def _free_owners(self, conn: _Table, owners: Sequence[str]) -> int:
        held = [
            s for s in conn.slots.values() if s.item.status == "pending" and s.lease_owner in owners
        ]
        for slot in held:
            slot.free()
        return len(held)

    def _retry(
        self,
        conn: _Table,
        item_id: int,
        owner: str,
        error: str,
        ready: datetime,
        max_attempts: int,
    ) -> None:
        slot = conn.slots.get(item_id)
        if slot is None or not slot.held_by(owner):
            return
        attempts = slot.item.attempts + 1
        status: OutboxStatus = "failed" if attempts >= max_attempts else "pending"
        slot.item = replace(slot.item, attempts=attempts, last_error=error, status=status)
        slot.available_at = ready
        slot.free()

    def _ready_scopes(self, conn: _Table, now: datetime) -> list[str]:
        return list(dict.fromkeys(s.item.scope for s in conn.slots.values() if s.ready(now)))

    def _next_ready(self, conn: _Table, scope: str | None) -> datetime | None:
        times = [
            max(slot.available_at, slot.lease_until or slot.available_at)
            for slot in conn.slots.values()
            if slot.item.status == "pending" and scope in (None, slot.item.scope)
        ]
        return min(times, default=None)

    def _items(self, conn: _Table, scope: str, status: str | None, limit: int) -> list[OutboxItem]:
        found = [
            slot.item
            for slot in reversed(conn.slots.values())
            if slot.item.scope == scope and status in (None, slot.item.status)
        ]
        return found[:limit]

    def _pending(self, conn: _Table) -> int:
        return sum(1 for slot in conn.slots.values() if slot.item.status == "pending")

    def _texts(self, conn: _Table) -> list[tuple[int, Any, str | None]]:
        return [
            (i, payload_to_json(s.item.payload), s.item.last_error) for i, s in conn.slots.items()
        ]

    def _rewrite(self, conn: _Table, changed: Sequence[tuple[int, Any, str | None]]) -> None:
        for item_id, payload, error in changed:
            slot = conn.slots[item_id]
            stored = payload_from_json(payload)
            slot.item = replace(slot.item, payload=stored, last_error=error or "")
