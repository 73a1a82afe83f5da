"""The chat ledger in dicts: received updates (leased until handled) and sent ids. The
rules are the flow's (`ChatLedgerFlow`), as on every database; only the storage is a
dict."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lore.backends.chat_ledger_flow import ChatLedgerFlow, Claimed
from lore.ports.chat_ledger import ConversationName

__all__ = ["FakeChatLedger"]


@dataclass
class _Entry:
    id: int
    channel: str
    key: str
    payload: dict[str, Any] | None
    received_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    handled: bool = False


@dataclass
class _Tables:
    received: dict[tuple[str, str], _Entry] = field(default_factory=dict)  # in order of age
    sent: dict[tuple[str, str], datetime] = field(default_factory=dict)
    names: dict[str, ConversationName] = field(default_factory=dict)
    last_id: int = 0  # never reused, as a database's row ids are not


class FakeChatLedger(ChatLedgerFlow[_Tables]):
    def __init__(self) -> None:
        self._tables = _Tables()
        self._lock = threading.RLock()

    @contextmanager
    def _writing(self) -> Iterator[_Tables]:
        with self._lock:
            yield self._tables

    def _reading(self) -> AbstractContextManager[_Tables]:
        return nullcontext(self._tables)

    def _record(
        self,
        conn: _Tables,
        channel: str,
        key: str,
        payload: dict[str, Any],
        now: datetime,
        owner: str,
        until: datetime,
    ) -> bool:
        if (channel, key) in conn.received:
            return False
        stored = copy.deepcopy(payload)  # as a database keeps it: apart from the caller's
        conn.last_id += 1
        entry = _Entry(conn.last_id, channel, key, stored, now, owner, until)
        conn.received[channel, key] = entry
        return True

    def _unhandled_of(self, conn: _Tables, channel: str) -> list[_Entry]:
        return [e for e in conn.received.values() if e.channel == channel and not e.handled]

    def _extend(self, conn: _Tables, channel: str, owner: str, until: datetime) -> int:
        held = [e for e in self._unhandled_of(conn, channel) if e.lease_owner == owner]
        for entry in held:
            entry.lease_until = until
        return len(held)

    def _claim(
        self, conn: _Tables, channel: str, owner: str, now: datetime, until: datetime, limit: int
    ) -> list[Claimed]:
        free = [
            e
            for e in self._unhandled_of(conn, channel)
            if e.lease_until is None or e.lease_until < now
        ][:limit]
        for entry in free:
            entry.lease_owner, entry.lease_until = owner, until
        return [(e.id, e.key, copy.deepcopy(e.payload or {}), e.received_at) for e in free]

    def _free_owners(self, conn: _Tables, channel: str, owners: Sequence[str]) -> int:
        held = [e for e in self._unhandled_of(conn, channel) if e.lease_owner in owners]
        for entry in held:
            entry.lease_until = None
        return len(held)

    def _unhandled(self, conn: _Tables) -> list[tuple[int, dict[str, Any]]]:
        return [
            (e.id, e.payload)
            for e in conn.received.values()
            if not e.handled and e.payload is not None
        ]

    def _rewrite(self, conn: _Tables, changed: Sequence[tuple[int, dict[str, Any]]]) -> None:
        payloads = dict(changed)
        for entry in conn.received.values():
            if entry.id in payloads and not entry.handled:
                entry.payload = payloads[entry.id]

    def _mark_handled(self, conn: _Tables, channel: str, key: str) -> None:
        entry = conn.received.get((channel, key))
        if entry is not None:
            entry.handled, entry.payload, entry.lease_owner, entry.lease_until = (
                True, None, None, None,
            )  # fmt: skip

    def _note_sent(
        self, conn: _Tables, channel: str, message_ids: Sequence[str], at: datetime
    ) -> None:
        for message_id in message_ids:
            conn.sent[channel, message_id] = at

    def _was_sent(self, conn: _Tables, channel: str, message_id: str) -> bool:
        return (channel, message_id) in conn.sent

    def _prune(self, conn: _Tables, before: datetime) -> int:
        old = [k for k, e in conn.received.items() if e.handled and e.received_at < before]
        sent = [k for k, at in conn.sent.items() if at < before]
        for key in old:
            del conn.received[key]
        for key in sent:
            del conn.sent[key]
        return len(old) + len(sent)

    def _name_of(self, conn: _Tables, scope: str) -> str | None:
        named = conn.names.get(scope)
        return None if named is None else named.name

    def _keep_name(self, conn: _Tables, scope: str, name: str, at: datetime) -> bool:
        if self._name_of(conn, scope) == name:
            return False
        conn.names[scope] = ConversationName(scope, name, at)
        return True

    def _names(self, conn: _Tables) -> list[ConversationName]:
        return sorted(conn.names.values(), key=lambda named: named.scope)
