"""Why a reply said what it said: what the turn showed the model, kept by reference.

Each assistant reply carries a small `why` record: the ids of the memories in the block,
every search hit its tools returned as [kind, source, locator, Unix time] under the
tool's name, the files it read or had injected, the skills it loaded. Only references,
never copies of text, so forgetting a memory needs no rewrite here: a reader looks each
id up and finds it gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Provenance", "SourceRef"]


@dataclass(frozen=True)
class SourceRef:
    """One search hit or history page, by where it lives (the index's identity)."""

    kind: str  # memory | note | message | session
    source: str  # '' for a memory, a note's path, a session id
    locator: int  # the memory id, the note's line, the message index
    at: float = 0.0  # Unix seconds: when it was said or written
    tool: str = ""  # the tool that returned it

    def to_row(self) -> list[Any]:
        """[kind, source, locator, at]: the stored form, under its tool's name."""
        return [self.kind, self.source, self.locator, round(self.at)]

    @classmethod
    def from_row(cls, row: list[Any], tool: str) -> SourceRef:
        kind, source, locator, at = (list(row) + ["", "", 0, 0])[:4]
        return cls(str(kind), str(source), int(locator), float(at or 0), tool)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "locator": self.locator,
            "at": round(self.at),
            "tool": self.tool,
        }


@dataclass
class Provenance:
    """What one turn showed the model, gathered as the turn runs."""

    memories: list[int] = field(default_factory=list)  # the block's `#id` lines
    hits: list[SourceRef] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # read by a tool or injected
    skills: list[str] = field(default_factory=list)

    def shown_memories(self, ids: Any) -> None:
        for memory_id in sorted(ids):
            if memory_id not in self.memories:
                self.memories.append(int(memory_id))

    def found(self, ref: SourceRef) -> None:
        if not any(_same(ref, seen) for seen in self.hits):
            self.hits.append(ref)

    def read(self, path: str) -> None:
        if path not in self.files:
            self.files.append(path)

    def loaded(self, skill: str) -> None:
        if skill not in self.skills:
            self.skills.append(skill)

    def __bool__(self) -> bool:
        return bool(self.memories or self.hits or self.files or self.skills)

    def to_dict(self) -> dict[str, Any]:
        """The stored form: empty parts left out, so a plain turn costs a few bytes."""
        data: dict[str, Any] = {}
        if self.memories:
            data["memories"] = list(self.memories)
        if self.hits:
            grouped: dict[str, list[list[Any]]] = {}
            for hit in self.hits:
                grouped.setdefault(hit.tool, []).append(hit.to_row())
            data["hits"] = grouped
        if self.files:
            data["files"] = list(self.files)
        if self.skills:
            data["skills"] = list(self.skills)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Provenance:
        if not isinstance(data, dict):
            return cls()
        grouped = data.get("hits")
        hits = [
            SourceRef.from_row(row, str(tool))
            for tool, rows in (grouped.items() if isinstance(grouped, dict) else [])
            for row in rows
            if isinstance(row, list)
        ]
        return cls(
            memories=[int(i) for i in data.get("memories") or [] if isinstance(i, int)],
            hits=hits,
            files=[str(f) for f in data.get("files") or []],
            skills=[str(s) for s in data.get("skills") or []],
        )


def _same(a: SourceRef, b: SourceRef) -> bool:
    return (a.kind, a.source, a.locator) == (b.kind, b.source, b.locator)
