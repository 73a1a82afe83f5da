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

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from lore.errors import DamagedRecordError

__all__ = [
    "OutboxStatus",
    "MAX_ATTEMPTS",
    "Outbox",
    "OutboxItem",
    "Payload",
    "ReminderPayload",
    "UnreadablePayload",
    "map_strings",
    "payload_from_json",
    "payload_from_text",
    "payload_to_json",
]

MAX_ATTEMPTS = 8  # then the item is marked failed, and shown as such


@dataclass(frozen=True)
class ReminderPayload:
    """What one occurrence of a reminder carries through the outbox: all its delivery
    reads. Stored as the JSON object `to_json` writes (the same keys every version kept)."""

    reminder_id: int
    text: str
    author: str
    due_at: datetime  # the occurrence's fire time, aware
    timezone: str = "UTC"  # IANA name the reminder was set in
    late: bool = False  # claimed well after it fell due
    recurrence: str | None = None  # canonical schedule text; None for a one-shot
    next_due: datetime | None = None  # where a recurring reminder moved at the claim

    def to_json(self) -> dict[str, Any]:
        return {
            "reminder_id": self.reminder_id,
            "text": self.text,
            "author": self.author,
            "due_at": self.due_at.isoformat(),
            "timezone": self.timezone,
            "late": self.late,
            "recurrence": self.recurrence,
            "next_due": self.next_due.isoformat() if self.next_due else None,
        }

    @classmethod
    def from_json(cls, data: object) -> ReminderPayload:
        """The payload a stored JSON value holds; DamagedRecordError saying what is wrong
        with one that holds none (keys a newer version adds are let be)."""
        if not isinstance(data, dict):
            raise DamagedRecordError(f"the payload is {_kind(data)}, not a JSON object")
        reminder_id = data.get("reminder_id")
        if not isinstance(reminder_id, int) or isinstance(reminder_id, bool):
            raise DamagedRecordError(f"reminder_id is {_kind(reminder_id)}, not a number")
        late = data.get("late", False)
        if not isinstance(late, bool):
            raise DamagedRecordError(f"late is {_kind(late)}, not true or false")
        recurrence, next_due = data.get("recurrence"), data.get("next_due")
        return cls(
            reminder_id=reminder_id,
            text=_string(data, "text"),
            author=_string(data, "author", ""),
            due_at=_moment(data.get("due_at"), "due_at"),
            timezone=_string(data, "timezone", "") or "UTC",
            late=late,
            recurrence=None if recurrence is None else _string(data, "recurrence"),
            next_due=None if next_due is None else _moment(next_due, "next_due"),
        )


@dataclass(frozen=True)
class UnreadablePayload:
    """A stored payload this version cannot read (damaged, or written by a newer Lore):
    kept as it is, never dropped; a delivery of it fails saying `problem`, so it is
    retried (another process may read it) and in the end shown as failed."""

    raw: str  # the stored text
    problem: str  # what is wrong with it, quoting none of it

    def __str__(self) -> str:
        return f"unreadable payload ({self.problem})"


Payload = ReminderPayload | UnreadablePayload

# An item waits (pending, leased or not), was delivered, or failed for good.
OutboxStatus = Literal["pending", "delivered", "failed"]


def payload_from_json(data: object, *, raw: str | None = None) -> Payload:
    """A stored payload, from the JSON value a store read (PostgreSQL's jsonb)."""
    try:
        return ReminderPayload.from_json(data)
    except DamagedRecordError as exc:
        kept = json.dumps(data, ensure_ascii=False) if raw is None else raw
        return UnreadablePayload(kept, str(exc))


def payload_from_text(text: str) -> Payload:
    """A stored payload, from the JSON text a store read (SQLite's TEXT column)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        return UnreadablePayload(str(text), f"not JSON: {exc}")
    return payload_from_json(data, raw=text)


def payload_to_json(payload: Payload) -> dict[str, Any]:
    """The JSON object a store keeps; an unreadable payload is never written anew."""
    if isinstance(payload, UnreadablePayload):
        raise DamagedRecordError(f"cannot queue an {payload}")
    return payload.to_json()


_KINDS = {bool: "true or false", int: "a number", float: "a number", str: "text"}


def _kind(value: object) -> str:
    """What a stored value is, never what it says (it may quote the reminder, which
    errors and the log never do)."""
    if value is None:
        return "missing"  # or null
    return _KINDS.get(type(value), "a list" if isinstance(value, list) else "an object")


def _string(data: dict[str, Any], name: str, default: str | None = None) -> str:
    value = data.get(name)
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise DamagedRecordError(f"{name} is {_kind(value)}, not text")
    return value


def _moment(value: object, name: str) -> datetime:
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if moment.tzinfo is not None:
                return moment
    raise DamagedRecordError(f"{name} is {_kind(value)}, not an aware ISO time")


@dataclass(frozen=True)
class OutboxItem:
    id: int
    key: str  # idempotency key: one delivery per key, ever
    scope: str
    channel: str  # the channel the item came from ('' when unknown)
    kind: str  # 'reminder'
    payload: Payload
    status: OutboxStatus
    attempts: int
    created_at: datetime
    last_error: str = ""

    @property
    def reminder(self) -> ReminderPayload:
        """The reminder's occurrence it holds; DamagedRecordError when its stored payload
        could not be read."""
        if isinstance(self.payload, UnreadablePayload):
            raise DamagedRecordError(f"the delivery {self.key} holds an {self.payload}")
        return self.payload


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

    def pending(self) -> int:
        """How many items are still to deliver, in every scope (`/metrics`)."""
        ...

    def items(
        self, scope: str, *, status: OutboxStatus | None = None, limit: int = 100
    ) -> list[OutboxItem]:
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
