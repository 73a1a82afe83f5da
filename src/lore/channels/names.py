"""Conversations have names: what a chat channel calls each of its conversations (a
group's title, the other person's name), kept in the chat ledger under the conversation
key and shown beside it by `lore sessions list`, `GET /api/scopes` and the web page.

A channel holds one `ConversationNames` and calls `note(scope, name)` whenever the
platform tells it a name (each message, a rename event): only a new or changed name is
written. `joined(scope, name)` is the same, with one log line the owner can look for
when the bot is added to a group: its name and its key.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lore.errors import LoreError
from lore.text import one_line

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["ConversationNames", "last_message_times"]

log = logging.getLogger(__name__)


class ConversationNames:
    """The names one channel (`"line"`, `"discord"`) keeps for its conversations."""

    def __init__(self, lore: Runtime, channel: str) -> None:
        self.lore = lore
        self.channel = channel
        self._known: dict[str, str] = {}  # what this process wrote or read: no round trip

    def note(self, scope: str, name: str) -> bool:
        """Keep `name` as the name of `scope`; True when it was new or changed. A store
        that fails is logged and never fails the message that carried the name."""
        name = " ".join(name.split())
        if not name or self._known.get(scope) == name:
            return False
        try:
            changed = self.lore.chat_ledger.name_conversation(
                scope, name, now=self.lore.clock.now()
            )
        except LoreError as exc:
            log.warning("%s: could not keep the name of %s: %s", self.channel, scope, exc)
            return False
        self._known[scope] = name
        if changed:
            log.info("%s: %s is named %s", self.channel, scope, one_line(name, 120))
        return changed

    def joined(self, scope: str, name: str) -> None:
        """The bot was added to the group `scope`, called `name` (empty when unknown):
        kept, and logged so the owner can find the group's key."""
        self.note(scope, name)
        shown = f"{one_line(name, 120)!r}" if name.strip() else "a group"
        log.info(
            "%s: Lore joined %s as %s (`lore memory list --scope %s` shows what it keeps)",
            self.channel,
            shown,
            scope,
            scope,
        )


def last_message_times(lore: Runtime, scopes: list[str]) -> dict[str, str]:
    """When each conversation last had a message (ISO 8601), from its live session or,
    failing that, its newest closed one; scopes with neither are left out."""
    found: dict[str, str] = {}
    try:
        for entry in lore.sessions.archive.entries():
            if entry.key in scopes and entry.ended_at > found.get(entry.key, ""):
                found[entry.key] = entry.ended_at
    except LoreError:
        pass
    for scope in scopes:
        meta = lore.sessions.live_meta(scope)
        if meta is not None and meta.updated_at > found.get(scope, ""):
            found[scope] = meta.updated_at
    return found
