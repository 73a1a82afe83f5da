"""How a chat ledger keeps received updates and sent message ids, the same on every
store: times are aware; an update is leased by the process that recorded it until
`seconds` after `now`, and claimed again, oldest first, once that lease ran out; ending
no one's lease or noting no id changes nothing; forget everywhere rewrites only the
payloads of updates not yet handled, through `redact_payload`.

A store subclasses `ChatLedgerFlow` and gives the SQL as hooks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from lore.backends.stored_time import aware
from lore.ports.chat_ledger import MAX_NAME, ConversationName, Received, redact_payload

__all__ = ["ChatLedgerFlow", "Claimed"]

Conn = TypeVar("Conn")
# A claimed update as a store reads it: id (its age), key, payload, received at.
Claimed = tuple[int, str, dict[str, Any], datetime]


class ChatLedgerFlow(ABC, Generic[Conn]):
    """The flow of a chat ledger over connections of type `Conn`."""

    redacted_noun = "chat message not yet answered"  # forget everywhere's word for one

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
        until = _aware(now) + timedelta(seconds=seconds)
        with self._writing() as conn:
            return self._record(conn, channel, key, payload, now, owner, until)

    def renew(self, channel: str, *, owner: str, now: datetime, seconds: float) -> int:
        until = _aware(now) + timedelta(seconds=seconds)
        with self._writing() as conn:
            return self._extend(conn, channel, owner, until)

    def claim(
        self, channel: str, *, owner: str, now: datetime, seconds: float, limit: int = 100
    ) -> list[Received]:
        until = _aware(now) + timedelta(seconds=seconds)
        with self._writing() as conn:
            claimed = self._claim(conn, channel, owner, now, until, limit)
        claimed.sort(key=lambda found: found[0])
        return [Received(channel, key, payload, at) for _, key, payload, at in claimed]

    def end_leases(self, channel: str, owners: Sequence[str]) -> int:
        if not owners:
            return 0
        with self._writing() as conn:
            return self._free_owners(conn, channel, owners)

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        with self._reading() as conn:
            unhandled = self._unhandled(conn)
        changed = [
            (update_id, redacted)
            for update_id, payload in unhandled
            for redacted in [redact_payload(payload, match, redact)]
            if redacted is not None
        ]
        if changed and not dry_run:
            with self._writing() as conn:
                self._rewrite(conn, changed)
        return len(changed)

    def handled(self, channel: str, key: str) -> None:
        with self._writing() as conn:
            self._mark_handled(conn, channel, key)

    def note_sent(self, channel: str, message_ids: Sequence[str], *, now: datetime) -> None:
        _aware(now)
        if not message_ids:
            return
        with self._writing() as conn:
            self._note_sent(conn, channel, message_ids, now)

    def was_sent(self, channel: str, message_id: str) -> bool:
        with self._reading() as conn:
            return self._was_sent(conn, channel, message_id)

    def prune(self, *, before: datetime) -> int:
        _aware(before)
        with self._writing() as conn:
            return self._prune(conn, before)

    def name_conversation(self, scope: str, name: str, *, now: datetime) -> bool:
        _aware(now)
        name = " ".join(name.split())[:MAX_NAME].strip()
        if not name:
            return False
        with self._reading() as conn:  # the common case, the name known: nothing to write
            if self._name_of(conn, scope) == name:
                return False
        with self._writing() as conn:
            return self._keep_name(conn, scope, name, now)

    def conversation_names(self) -> dict[str, ConversationName]:
        with self._reading() as conn:
            return {named.scope: named for named in self._names(conn)}

    # -- the SQL each store gives -----------------------------------------------------------

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Conn]:
        """One write transaction."""

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Conn]:
        """A connection to read from."""

    @abstractmethod
    def _record(
        self,
        conn: Conn,
        channel: str,
        key: str,
        payload: dict[str, Any],
        now: datetime,
        owner: str,
        until: datetime,
    ) -> bool:
        """Add the update received at `now`, leased by `owner` until `until`; False when
        its key is there already."""

    @abstractmethod
    def _extend(self, conn: Conn, channel: str, owner: str, until: datetime) -> int:
        """Move every lease `owner` holds on the channel's unhandled updates to `until`."""

    @abstractmethod
    def _claim(
        self, conn: Conn, channel: str, owner: str, now: datetime, until: datetime, limit: int
    ) -> list[Claimed]:
        """Lease to `owner` until `until` the oldest `limit` unhandled updates whose lease
        ran out by `now` (skipping those another claim holds)."""

    @abstractmethod
    def _free_owners(self, conn: Conn, channel: str, owners: Sequence[str]) -> int:
        """End the leases these owners hold on the channel's unhandled updates; how many."""

    @abstractmethod
    def _unhandled(self, conn: Conn) -> list[tuple[int, dict[str, Any]]]:
        """(id, payload) of every unhandled update."""

    @abstractmethod
    def _rewrite(self, conn: Conn, changed: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Store these (id, payload) on updates still unhandled."""

    @abstractmethod
    def _mark_handled(self, conn: Conn, channel: str, key: str) -> None:
        """The update is handled: its payload and lease dropped, its key kept."""

    @abstractmethod
    def _note_sent(
        self, conn: Conn, channel: str, message_ids: Sequence[str], at: datetime
    ) -> None:
        """Keep these ids as sent at `at` (again, if known)."""

    @abstractmethod
    def _was_sent(self, conn: Conn, channel: str, message_id: str) -> bool:
        """Whether this id is kept as sent."""

    @abstractmethod
    def _prune(self, conn: Conn, before: datetime) -> int:
        """Drop handled updates received and ids sent before `before`; how many."""

    @abstractmethod
    def _name_of(self, conn: Conn, scope: str) -> str | None:
        """The name kept for `scope`, if any."""

    @abstractmethod
    def _keep_name(self, conn: Conn, scope: str, name: str, at: datetime) -> bool:
        """Keep `name` for `scope`, named at `at`, unless it is the name kept; whether it
        was written."""

    @abstractmethod
    def _names(self, conn: Conn) -> list[ConversationName]:
        """Every name kept."""


def _aware(moment: datetime) -> datetime:
    return aware(moment, "chat ledger")
