"""Noting a memory in a test: John, through the tool, at the tests' fixed moment."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from lore.ports.memories import MemoryStore, Source

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"


def note(
    store: MemoryStore,
    content: str,
    scope: str = HOME,
    *,
    kind: str = "fact",
    keywords: Iterable[str] = (),
    source: Source | None = None,
    expires_at: datetime | None = None,
) -> int:
    """Remember `content` in `scope` as John did with the tool at NOW; its id."""
    memory, _ = store.remember(
        scope,
        content,
        kind=kind,
        keywords=keywords,
        author="john",
        via="tool",
        now=NOW,
        source=source,
        expires_at=expires_at,
    )
    return memory.id
