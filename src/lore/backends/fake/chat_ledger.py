"""The chat ledger in dicts: received updates (leased until handled) and sent ids."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from lore.ports.chat_ledger import Received, redact_payload

__all__ = ["FakeChatLedger"]


@dataclass
class _Entry:
    received: Received
    handled: bool = False
    lease_owner: str | None = None
    lease_until: float = 0.0


class FakeChatLedger:
    redacted_noun = "chat message not yet answered"  # forget everywhere's word for one

    def __init__(self) -> None:
        self._received: dict[tuple[str, str], _Entry] = {}  # insertion order is age
        self._sent: dict[tuple[str, str], datetime] = {}

    def receive(
        self,
        channel: str,
        key: str,
        payload: dict[str, Any],
        *,
        owner: str,
        now: datetime,
        seconds: float,
    ) -> bool:
        if (channel, key) in self._received:
            return False
        received = Received(channel, key, copy.deepcopy(payload), now)
        self._received[channel, key] = _Entry(received, False, owner, now.timestamp() + seconds)
        return True

    def renew(self, channel: str, *, owner: str, now: datetime, seconds: float) -> int:
        count = 0
        for (where, _), entry in self._received.items():
            if where == channel and not entry.handled and entry.lease_owner == owner:
                entry.lease_until = now.timestamp() + seconds
                count += 1
        return count

    def claim(
        self, channel: str, *, owner: str, now: datetime, seconds: float, limit: int = 100
    ) -> list[Received]:
        claimed: list[Received] = []
        for (where, _), entry in self._received.items():
            if len(claimed) >= limit:
                break
            if where == channel and not entry.handled and entry.lease_until < now.timestamp():
                entry.lease_owner, entry.lease_until = owner, now.timestamp() + seconds
                claimed.append(copy.deepcopy(entry.received))
        return claimed

    def end_leases(self, channel: str, owners: Sequence[str]) -> int:
        ended = 0
        for (where, _), entry in self._received.items():
            if where == channel and not entry.handled and entry.lease_owner in owners:
                entry.lease_until = 0.0
                ended += 1
        return ended

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        changed = 0
        for entry in self._received.values():
            if entry.handled:
                continue
            payload = redact_payload(entry.received.payload, match, redact)
            if payload is not None:
                changed += 1
                if not dry_run:
                    entry.received = replace(entry.received, payload=payload)
        return changed

    def handled(self, channel: str, key: str) -> None:
        entry = self._received.get((channel, key))
        if entry is not None:
            entry.handled, entry.lease_owner, entry.lease_until = True, None, 0.0
            entry.received = Received(channel, key, {}, entry.received.received_at)

    def note_sent(self, channel: str, message_ids: Sequence[str], *, now: datetime) -> None:
        for message_id in message_ids:
            self._sent[channel, message_id] = now

    def was_sent(self, channel: str, message_id: str) -> bool:
        return (channel, message_id) in self._sent

    def prune(self, *, before: datetime) -> int:
        old = [
            key
            for key, entry in self._received.items()
            if entry.handled and entry.received.received_at < before
        ]
        sent = [key for key, at in self._sent.items() if at < before]
        for key in old:
            del self._received[key]
        for key in sent:
            del self._sent[key]
        return len(old) + len(sent)
