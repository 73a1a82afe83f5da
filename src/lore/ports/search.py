"""The search index port: entries (a memory, a chunk of a note, one archived message)
with their scope, source and time, searched by text and by vector.

A scope's search never reads another scope's entries: scopes are applied inside each
query, never by filtering a result list afterwards. The suite in
tests/contract/test_search_index_contract.py holds every backend to this; the memory
queue is left out of it, because memory writes fill it from the memories store's side
(on the local backend, triggers in the one database).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lore.embed import Embedder

__all__ = ["KINDS", "Entry", "IndexStats", "SearchIndexPort", "SourceRecord", "Stored"]

KINDS = ("memory", "note", "message")


@dataclass(frozen=True)
class Entry:
    """Something to index. (kind, source, locator) identifies it; writing it again replaces."""

    scope: str
    kind: str
    source: str  # '' for a memory, a file path for a note, a session id for a message
    locator: int  # the memory id, the note's first line, the message index
    at: float  # Unix seconds
    text: str
    speaker: str = ""  # who said it (message) or the heading it sits under (note)
    context: str = ""  # embedded with the text (the previous turn), never shown
    extra: str = ""  # matched at a lower weight, never shown: keywords, date, neighbours
    expires_at: float | None = None
    about_start: float | None = None  # the span the text names ("last week"), if any
    about_end: float | None = None


@dataclass(frozen=True)
class Stored:
    """An indexed entry as a search result needs it."""

    id: int
    scope: str
    kind: str
    source: str
    locator: int
    at: float
    speaker: str
    text: str
    about_start: float | None = None
    about_end: float | None = None

    @property
    def display(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True)
class SourceRecord:
    """What a file or archived session looked like when it was last indexed."""

    kind: str
    source: str
    scope: str
    mtime_ns: int
    size: int
    digest: str


@dataclass(frozen=True)
class IndexStats:
    entries: dict[str, int]
    sources: dict[str, int]  # distinct memories, note files, sessions with entries
    scopes: int
    vectors: int
    pending_vectors: int
    queued_memories: int
    embedder: str


class SearchIndexPort(Protocol):
    def batch(self) -> AbstractContextManager[None]:
        """Several writes as one transaction (an exception inside undoes them all)."""

    @property
    def embedder(self) -> Embedder: ...

    def put(self, entries: Iterable[Entry]) -> list[int]:
        """Index entries, each replacing any at its (kind, source, locator); searchable by
        text at once, by vector once embedded. An unknown kind is a ValueError (nothing
        written)."""

    def replace_source(
        self, kind: str, source: str, entries: Sequence[Entry], record: SourceRecord | None
    ) -> None: ...

    def replace_source_record(self, record: SourceRecord) -> None: ...

    def remove_source(self, kind: str, source: str) -> int: ...

    def remove_memory(self, memory_id: int) -> bool: ...

    def clear(self, *, requeue_memories: bool = False) -> None: ...

    def queued_memories(self, limit: int = 500) -> list[tuple[int, str | None]]: ...

    def has_queued_memories(self) -> bool: ...

    def dequeue_memories(self, memory_ids: Sequence[int]) -> None: ...

    def source_records(self, kind: str) -> dict[str, SourceRecord]: ...

    def source_record(self, kind: str, source: str) -> SourceRecord | None:
        """One source's record, read alone (a turn looks up its own session)."""

    def pending_vectors(self, *, since: float | None = None, kinds: Sequence[str] = KINDS) -> int:
        """Entries without a vector (only those of `kinds` dated `since` or later)."""

    def embed_pending(
        self,
        *,
        batch: int = 16,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
        since: float | None = None,
    ) -> int:
        """Embed entries without a vector (only those dated `since` or later)."""

    def text_search(
        self, scopes: Sequence[str], query: str, *, limit: int, now: float
    ) -> list[int]:
        """Unexpired entries of these scopes matching any word of `query` (in their text,
        or at a lower weight their `extra`), best first."""

    def vector_search(
        self, scopes: Sequence[str], query: NDArray[np.float32], *, limit: int, now: float
    ) -> list[tuple[int, float]]:
        """Unexpired embedded entries of these scopes nearest to `query` (cosine), best
        first."""

    def vectors_of(self, scope: str, ids: Sequence[int]) -> dict[int, NDArray[np.float32]]:
        """The stored vectors of some entries of a scope (those already embedded)."""
        ...

    def facts_of(self, scope: str, session_id: str) -> dict[int, list[str]]:
        """Active memories extracted from a session's messages, by message index."""
        ...

    def superseded_in(self, scope: str, session_id: str) -> dict[int, int]:
        """Messages of a session whose memory was since superseded: message index -> the
        id of the active memory that holds the fact now."""
        ...

    def fetch(self, ids: Sequence[int]) -> dict[int, Stored]: ...

    def stats(self) -> IndexStats: ...

    def entries_matching(self, match: Callable[[str], bool]) -> list[int]:
        """Entries whose text (or the context embedded with it) `match`es."""

    def remove_entries(self, entry_ids: Sequence[int]) -> int:
        """Drop these entries, words and vectors included, leaving no trace of their text."""

    def hide(self, kind: str, source: str, marks: Iterable[str]) -> None:
        """Keep these marks of a source out of the index for good (a forgotten memory's
        turns, its note chunks): `hidden` returns them after any `clear`."""

    def hidden(self, kind: str) -> dict[str, frozenset[str]]:
        """Every hidden mark of this kind, by source."""
