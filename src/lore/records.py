"""The typed answers of `lore.Memory` and `lore.Client`: frozen records made from the same
JSON shapes the REST API answers with, so an embedded call and a call to `lore serve`
return equal values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lore.errors import InvalidInputError

__all__ = [
    "Added",
    "Forgotten",
    "HistoryEntry",
    "MemoryBlock",
    "MemoryRecord",
    "ReminderRecord",
    "SearchHit",
    "memory_id",
]


def memory_id(value: object) -> int:
    """A memory's number as a caller gave it (12), else InvalidInputError."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{value!r} is not a memory id (a number such as 12)")
    return value


def _time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


@dataclass(frozen=True)
class MemoryRecord:
    """One structured memory, as `lore memory list --json` prints it."""

    id: int
    kind: str
    content: str
    keywords: tuple[str, ...]
    author: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    source: Mapping[str, Any] | None = None  # {"session": id, "message": index}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryRecord:
        created, updated = _time(data["created_at"]), _time(data["updated_at"])
        assert created is not None and updated is not None
        return cls(
            id=int(data["id"]),
            kind=str(data["kind"]),
            content=str(data["content"]),
            keywords=tuple(data.get("keywords") or ()),
            author=str(data.get("author", "")),
            created_at=created,
            updated_at=updated,
            expires_at=_time(data.get("expires_at")),
            source=data.get("source"),
        )


@dataclass(frozen=True)
class SearchHit:
    """One search result: a memory, a line of notes or a message of an archived session.

    `id` is the memory's number for a memory, else None; `locator` says where the text
    is ("memory #12", "memory/2026-11-30.md:4", "session 2a9f… message 6"); `source` is
    its provenance as the REST API gives it; `superseded_by`, for a message stating a
    memory's old value, is the memory that holds the fact now."""

    kind: str  # memory | note | message
    text: str
    score: float
    id: int | None
    locator: str
    time: datetime
    source: Mapping[str, Any]
    scope: str
    speaker: str | None = None
    superseded_by: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchHit:
        source = dict(data["source"])
        kind = str(source["kind"])
        if kind == "memory":
            memory_id: int | None = int(source["memory_id"])
            locator = f"memory #{memory_id}"
        elif kind == "note":
            memory_id, locator = None, f"{source['path']}:{source['line']}"
        else:
            memory_id = None
            locator = f"session {source['session_id']} message {source['message_index']}"
        time = _time(data["time"])
        assert time is not None
        superseded = data.get("superseded_by")
        return cls(
            kind=kind,
            text=str(data["text"]),
            score=float(data["score"]),
            id=memory_id,
            locator=locator,
            time=time,
            source=source,
            scope=str(data.get("scope", "")),
            speaker=data.get("speaker"),
            superseded_by=None if superseded is None else int(superseded),
        )


@dataclass(frozen=True)
class MemoryBlock:
    """The memory block exactly as the model sees it in the scope's next turn, with the
    ids it shows and how many older memories did not fit its budget."""

    text: str
    shown: tuple[int, ...]
    hidden: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryBlock:
        return cls(str(data["text"]), tuple(int(i) for i in data["shown"]), int(data["hidden"]))


@dataclass(frozen=True)
class HistoryEntry:
    """One change to a memory's chain of versions; `detail` is None once forgotten."""

    id: int
    memory_id: int
    action: str  # add, update, forget, import
    actor: str
    via: str
    at: datetime
    detail: Mapping[str, Any] | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HistoryEntry:
        at = _time(data["at"])
        assert at is not None
        return cls(
            id=int(data["id"]),
            memory_id=int(data["memory_id"]),
            action=str(data["action"]),
            actor=str(data["actor"]),
            via=str(data["via"]),
            at=at,
            detail=data.get("detail"),
        )


@dataclass(frozen=True)
class ReminderRecord:
    """A reminder and the line Lore describes it with ("tomorrow 09:00 — call mum")."""

    id: int
    text: str
    due_at: datetime
    recurrence: str | None
    status: str
    author: str
    description: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReminderRecord:
        due = _time(data["due_at"])
        assert due is not None
        return cls(
            id=int(data["id"]),
            text=str(data["text"]),
            due_at=due,
            recurrence=data.get("recurrence"),
            status=str(data["status"]),
            author=str(data.get("author", "")),
            description=str(data.get("description", "")),
        )


@dataclass(frozen=True)
class Added:
    """What `add` did: the memories it wrote (new ones, new versions), the notices a
    turn would show ("noted #12 …"), and whether a model extracted them."""

    memories: tuple[MemoryRecord, ...]
    notices: tuple[str, ...]
    extracted: bool

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Added:
        return cls(
            tuple(MemoryRecord.from_dict(m) for m in data["memories"]),
            tuple(str(n) for n in data["notices"]),
            bool(data["extracted"]),
        )


@dataclass(frozen=True)
class Forgotten:
    """What `forget` erased: the memory and its earlier versions and, with `everywhere`,
    the lines saying which copies under the home were erased too."""

    id: int | None
    erased: tuple[int, ...]
    everywhere: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Forgotten:
        memory_id = data.get("id")
        return cls(
            None if memory_id is None else int(memory_id),
            tuple(int(i) for i in data["erased"]),
            tuple(str(line) for line in data.get("everywhere") or ()),
        )
