"""A search hit: the stored entry, its score, where each list ranked it, the copies that
folded into it, and the memory that holds the fact now when it states an old value."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lore.ports.search import Stored
from lore.text import normalise

__all__ = ["Hit", "snippet"]


@dataclass(frozen=True)
class Hit:
    entry: Stored
    score: float
    text_rank: int | None  # 1-based rank in each list, None when absent
    vector_rank: int | None
    duplicates: list[Stored] = field(default_factory=list)
    superseded_by: int | None = None  # a message stating a memory's old value

    @property
    def source(self) -> dict[str, Any]:
        e = self.entry
        if e.kind == "memory":
            return {"kind": "memory", "memory_id": e.locator}
        if e.kind == "note":
            return {"kind": "note", "path": e.source, "line": e.locator}
        return {"kind": "message", "session_id": e.source, "message_index": e.locator}

    @property
    def label(self) -> str:
        e = self.entry
        if e.kind == "memory":
            return f"memory #{e.locator}"
        if e.kind == "note":
            return f"{e.source}:{e.locator}"
        return f"session {e.source} message {e.locator}"

    def to_dict(self, query: str = "") -> dict[str, Any]:
        return {
            "source": self.source,
            "scope": self.entry.scope,
            "time": datetime.fromtimestamp(self.entry.at, UTC).isoformat(timespec="seconds"),
            "speaker": self.entry.speaker,
            "text": snippet(self.entry.text, query) if query else self.entry.text,
            "score": round(self.score, 6),
            "matched": [
                n for n, r in (("text", self.text_rank), ("vector", self.vector_rank)) if r
            ],
            "duplicates": len(self.duplicates),
            "superseded_by": self.superseded_by,
        }


_TERM = re.compile(r"[^\W_]{2,}")


def snippet(text: str, query: str, width: int = 280) -> str:
    """`text` cut to about `width` characters around the first place the query matches."""
    if len(text) <= width:
        return text
    lowered = normalise(text)
    positions = [lowered.find(t) for t in _TERM.findall(normalise(query)) if len(t) >= 2]
    # A CJK query word is often longer than the text's word: try its first two characters.
    positions += [lowered.find(t[:2]) for t in _TERM.findall(normalise(query)) if len(t) > 2]
    found = [p for p in positions if p >= 0]
    start = max(0, min(found) - width // 3) if found else 0
    end = min(len(text), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
