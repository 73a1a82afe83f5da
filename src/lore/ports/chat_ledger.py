"""The chat ledger port: what a chat channel (LINE, Telegram) must still know after a restart.

Two things. The updates it received, each under the channel's own id for it (LINE's
`webhookEventId`, Telegram's `update_id`): recorded before the update is acknowledged,
so a redelivery is recognised, and one recorded but never handled (the process died
between the acknowledgement and the turn) is handled again. A received update is
leased by the process that recorded it; a process that dies lets its lease run out and
the next `claim` hands the update to whoever asks, as the outbox does with deliveries.
Once handled, its payload (the message's text) is dropped, and only the id is kept.

And the ids of the messages Lore sent, so a reply quoting one is seen as said to Lore.
And the human name of each conversation (a group's title, the other person's name),
under its scope, kept as long as the conversation: `lore sessions list`, `GET /api/scopes`
and the web page show it beside the key.

`prune` forgets handled updates and sent ids older than a few days; an update never
handled is kept until it is. Forget everywhere reaches an unhandled update's payload too:
`redact_text` rewrites its matching strings in place, and the update keeps its id (a
redelivery is still a duplicate) and stays unhandled, so it is still answered, with the
forgotten words replaced, as the outbox still delivers a redacted reminder. The suite in
tests/contract/test_chat_ledger_contract.py holds every backend to this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from lore.ports.outbox import map_strings

__all__ = ["MAX_NAME", "RETENTION", "ChatLedger", "ConversationName", "Received", "redact_payload"]

# How long a handled update id and a sent message id are kept: LINE redelivers for a
# day at most, Telegram keeps an unconfirmed update for a day, and a reply quoting Lore
# a few days later still counts as said to Lore.
RETENTION = timedelta(days=3)
MAX_NAME = 200  # characters of a conversation's name kept (a Telegram title has 128)


@dataclass(frozen=True)
class Received:
    channel: str  # "line", "telegram"
    key: str  # the channel's id for the update
    payload: dict[str, Any]  # the update as the channel sent it
    received_at: datetime


@dataclass(frozen=True)
class ConversationName:
    scope: str  # the conversation key: "line:group:C…", "whatsapp:15551234567"
    name: str  # one line, as the platform shows it
    named_at: datetime  # when it was last learnt or changed


class ChatLedger(Protocol):
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
        """Record an update, leased by `owner` for `seconds`, before it is acknowledged;
        False (and nothing changes) when `key` was received before, whatever became of it."""

    def renew(self, channel: str, *, owner: str, now: datetime, seconds: float) -> int:
        """Extend every lease `owner` holds on unhandled updates; how many."""

    def claim(
        self, channel: str, *, owner: str, now: datetime, seconds: float, limit: int = 100
    ) -> list[Received]:
        """Unhandled updates whose lease ran out (their process died), oldest first, now
        leased by `owner`."""

    def end_leases(self, channel: str, owners: Sequence[str]) -> int:
        """The leases these owners hold on unhandled updates run out now (their
        processes have ended: `lore.lease_holder`); how many."""

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every string of every unhandled update's payload that `match`es through
        `redact` (forget everywhere); each keeps its id, lease and place in the queue. How
        many updates (would) change."""

    def handled(self, channel: str, key: str) -> None:
        """The update is in its conversation (or needed nothing): its payload is dropped."""

    def note_sent(self, channel: str, message_ids: Sequence[str], *, now: datetime) -> None:
        """Remember the ids of messages Lore sent."""

    def was_sent(self, channel: str, message_id: str) -> bool:
        """Did Lore send the message with this id (within the retention)?"""

    def prune(self, *, before: datetime) -> int:
        """Forget handled updates and sent ids recorded before `before`; how many rows
        (names are kept)."""

    def name_conversation(self, scope: str, name: str, *, now: datetime) -> bool:
        """Keep `name` (spaces folded, at most MAX_NAME characters) as the conversation's
        name; True when it is new or changed, False (nothing written) when it is the name
        kept already or blank."""

    def conversation_names(self) -> dict[str, ConversationName]:
        """Every conversation's name, by scope."""


def redact_payload(
    payload: dict[str, Any], match: Callable[[str], bool], redact: Callable[[str], str]
) -> dict[str, Any] | None:
    """The payload with every string that `match`es passed through `redact`, at any
    depth; None when no string matches (the update is left as it is)."""
    found = False

    def change(text: str) -> str:
        nonlocal found
        if not match(text):
            return text
        found = True
        return redact(text)

    redacted: dict[str, Any] = map_strings(payload, change)
    return redacted if found else None
