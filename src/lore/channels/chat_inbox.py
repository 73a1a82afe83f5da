"""A chat channel's inbox (LINE, Telegram): what survives a restart of `lore serve`.

Every update is recorded in the chat ledger before it is acknowledged (the webhook's 200,
or the next getUpdates offset), and marked handled once its message is in its
conversation. A redelivered update is recognised by its id and dropped, after a restart
too. One recorded but never handled (the process died between the acknowledgement and
the turn) is leased to the process that recorded it; that process renews the lease while
it lives, and once it stops renewing, the next `lore serve` (or another worker) claims
the update and handles it: the message is answered late, by push, never lost. The ids
of messages Lore sent are kept too, so a reply quoting one is still said to Lore.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from lore.errors import LoreError
from lore.ports.chat_ledger import RETENTION, Received

if TYPE_CHECKING:
    from lore.clock import Clock
    from lore.lease_holder import LeaseHolder
    from lore.ports.chat_ledger import ChatLedger
    from lore.runtime import Runtime

__all__ = ["LEASE_SECONDS", "ChatInbox", "in_conversation"]

log = logging.getLogger(__name__)

# How long an unhandled update stays with the process that recorded it without being
# renewed: after a crash, the next process answers it within about this long.
LEASE_SECONDS = 60.0
_PRUNE_EVERY = timedelta(hours=1)


class ChatInbox:
    def __init__(
        self,
        ledger: ChatLedger,
        channel: str,
        clock: Clock,
        *,
        lease: float = LEASE_SECONDS,
        holder: LeaseHolder | None = None,
    ) -> None:
        self.ledger = ledger
        self.channel = channel
        self.clock = clock
        self.lease = lease
        # This process as the holder of leases; with a holder, what a process that ended
        # left unhandled is taken over at the next sweep, not when its lease runs out.
        self.holder = holder
        self.owner = holder.name if holder is not None else uuid.uuid4().hex
        self._pruned: datetime | None = None

    def receive(self, key: str, payload: dict[str, Any]) -> bool:
        """Record an update before it is acknowledged; False for one received before."""
        now = self.clock.now()
        if self._pruned is None or now - self._pruned > _PRUNE_EVERY:
            self._pruned = now
            self.ledger.prune(before=now - RETENTION)
        return self.ledger.receive(
            self.channel, key, payload, owner=self.owner, now=now, seconds=self.lease
        )

    def handled(self, key: str) -> None:
        """The update's message is in its conversation (or needed nothing)."""
        if not key:
            return
        try:
            self.ledger.handled(self.channel, key)
        except LoreError as exc:  # it will be claimed again: the session check skips it
            log.warning("%s: could not mark update %s handled: %s", self.channel, key, exc)

    def sent(self, message_ids: Sequence[str]) -> None:
        self.ledger.note_sent(self.channel, message_ids, now=self.clock.now())

    def was_sent(self, message_id: str) -> bool:
        return self.ledger.was_sent(self.channel, message_id)

    def sweep(self) -> list[Received]:
        """Renew the leases this process holds; claim what a dead process left."""
        now = self.clock.now()
        self.ledger.renew(self.channel, owner=self.owner, now=now, seconds=self.lease)
        if self.holder is not None and (gone := self.holder.gone()):
            self.ledger.end_leases(self.channel, gone)
        return self.ledger.claim(self.channel, owner=self.owner, now=now, seconds=self.lease)

    async def keep(self, handle: Callable[[Received], Awaitable[None]]) -> None:
        """Until cancelled: every third of the lease, sweep and hand on what was left."""
        while True:
            try:
                left = self.sweep()
            except LoreError as exc:
                log.warning("%s: the inbox could not be swept: %s", self.channel, exc)
                left = []
            for received in left:
                log.info("%s: handling update %s left unhandled", self.channel, received.key)
                try:
                    await handle(received)
                except Exception:  # an update that cannot be read never blocks the rest
                    log.exception("%s: update %s cannot be handled", self.channel, received.key)
                    self.handled(received.key)
            await asyncio.sleep(self.lease / 3)


def in_conversation(lore: Runtime, scope: str, channel: str, message_id: str) -> bool:
    """Is the message already in its conversation? Then its turn ran (or was running
    when the process was killed: what it had shown is kept) and is not run again. A turn
    cut short by a stop was marked cancelled, which leaves the conversation as it was:
    that message is handled anew."""
    if not message_id:
        return False
    for message in reversed(lore.session(scope).messages):
        if message.get("message_id") == message_id and message.get("channel") == channel:
            return not message.get("cancelled")
    return False
