"""The outbox in a dict: leases as (owner, until), one item per idempotency key, ever."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from lore.ports.outbox import MAX_ATTEMPTS, OutboxItem, payload_from_json, payload_to_json

__all__ = ["FakeOutbox"]


@dataclass
class _Slot:
    item: OutboxItem
    available_at: int  # whole seconds, as the local backend keeps them
    lease_owner: str | None = None
    lease_until: float = 0.0

    def ready(self, now: datetime) -> bool:
        return (
            self.item.status == "pending"
            and self.available_at <= _ts(now)
            and self.lease_until < now.timestamp()
        )

    def held_by(self, owner: str) -> bool:
        return self.item.status == "pending" and self.lease_owner == owner


class FakeOutbox:
    redacted_noun = "delivery"  # forget everywhere's word for one

    def __init__(self) -> None:
        self._slots: dict[int, _Slot] = {}
        self._keys: set[str] = set()

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        changed = 0
        for slot in self._slots.values():
            stored = payload_to_json(slot.item.payload)
            payload = {
                k: redact(v) if isinstance(v, str) and match(v) else v for k, v in stored.items()
            }
            if payload != stored:
                changed += 1
                if not dry_run:
                    slot.item = replace(slot.item, payload=payload_from_json(payload))
        return changed

    def put(self, item: OutboxItem, *, now: datetime) -> bool:
        if item.key in self._keys:
            return False
        item_id = len(self._slots) + 1
        stored = replace(
            item,
            id=item_id,
            payload=payload_from_json(payload_to_json(item.payload)),  # as stores keep it
            status="pending",
            attempts=0,
            last_error="",
            created_at=datetime.fromtimestamp(_ts(now), UTC),
        )
        self._slots[item_id] = _Slot(stored, _ts(now))
        self._keys.add(item.key)
        return True

    def lease(
        self,
        *,
        owner: str,
        now: datetime,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
        seconds: float = 60.0,
    ) -> list[OutboxItem]:
        leased: list[OutboxItem] = []
        for slot in self._slots.values():
            if len(leased) >= limit:
                break
            if slot.ready(now) and (scopes is None or slot.item.scope in scopes):
                slot.lease_owner, slot.lease_until = owner, now.timestamp() + seconds
                leased.append(slot.item)
        return leased

    def done(self, item_id: int, *, owner: str, now: datetime) -> bool:
        _ts(now)
        slot = self._slots.get(item_id)
        if slot is None or not slot.held_by(owner):
            return False
        slot.item = replace(slot.item, status="delivered")
        slot.lease_owner, slot.lease_until = None, 0.0
        return True

    def release(self, item_id: int, *, owner: str) -> None:
        slot = self._slots.get(item_id)
        if slot is not None and slot.held_by(owner):
            slot.lease_owner, slot.lease_until = None, 0.0

    def end_leases(self, owners: Sequence[str]) -> int:
        ended = 0
        for slot in self._slots.values():
            if slot.lease_owner in owners and slot.item.status == "pending":
                slot.lease_owner, slot.lease_until = None, 0.0
                ended += 1
        return ended

    def retry(self, item_id: int, *, owner: str, now: datetime, error: str, delay: float) -> None:
        slot = self._slots.get(item_id)
        if slot is None or not slot.held_by(owner):
            return
        attempts = slot.item.attempts + 1
        status = "failed" if attempts >= MAX_ATTEMPTS else "pending"
        slot.item = replace(slot.item, attempts=attempts, last_error=error[:500], status=status)
        slot.available_at = _ts(now) + int(delay)
        slot.lease_owner, slot.lease_until = None, 0.0

    def ready_scopes(self, now: datetime) -> list[str]:
        return list(dict.fromkeys(s.item.scope for s in self._slots.values() if s.ready(now)))

    def next_ready(self, scope: str | None = None) -> datetime | None:
        times = [
            max(float(slot.available_at), slot.lease_until)
            for slot in self._slots.values()
            if slot.item.status == "pending" and scope in (None, slot.item.scope)
        ]
        return datetime.fromtimestamp(min(times), UTC) if times else None

    def items(self, scope: str, *, status: str | None = None, limit: int = 100) -> list[OutboxItem]:
        found = [
            slot.item
            for slot in reversed(self._slots.values())
            if slot.item.scope == scope and status in (None, slot.item.status)
        ]
        return found[:limit]


def _ts(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError("outbox times must be aware")
    return math.floor(moment.timestamp())
