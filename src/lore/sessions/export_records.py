"""What reading an export yields, whatever the source: its conversations, notes and
the items skipped with their reasons (read by lore.sessions.export_formats and
export_agents, written by lore.sessions.importing)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lore.llm.base import Message

__all__ = ["Conversation", "Export", "ImportedNote", "Skipped", "aware_time", "message_at"]


@dataclass(frozen=True)
class Conversation:
    """One conversation as the other assistant kept it: its user and assistant messages
    (each with its original `timestamp`), on the branch its user last saw."""

    source: str
    external_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    messages: list[Message]
    # Its messages are facts another agent kept (mem0's memories, nanobot's USER.md
    # lines), each to become a memory linked to its message.
    facts: bool = False

    @property
    def content_hash(self) -> str:
        """The same conversation exported again hashes the same (ids and order kept)."""
        return _digest([self.source, self.external_id, self.title, self.messages])


@dataclass(frozen=True)
class ImportedNote:
    """One Markdown note, front matter and all, at its path inside the folder."""

    relative: str  # posix, ends in .md
    text: str
    modified_at: datetime

    @property
    def content_hash(self) -> str:
        return _digest(["markdown", self.relative, self.text])


@dataclass(frozen=True)
class Skipped:
    item: str
    reason: str


@dataclass
class Export:
    source: str
    path: str
    conversations: list[Conversation] = field(default_factory=list)
    notes: list[ImportedNote] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _digest(value: object) -> str:
    data = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def message_at(role: str, text: str, moment: datetime | None) -> Message:
    """An imported message, with its original time when the export has one."""
    message: dict[str, Any] = {"role": role, "content": text}
    if moment is not None:
        message["timestamp"] = moment.isoformat(timespec="seconds")
    return message  # type: ignore[return-value]


def aware_time(value: object) -> datetime | None:
    """An ISO 8601 time as an aware datetime (UTC when it names no zone); None for
    anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
