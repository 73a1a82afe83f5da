"""The search index in a dict: text found by `matches` (the fake memories' word and
character match), vectors compared by brute-force cosine.

Nothing feeds its memory queue: on the local backend, memory writes queue themselves
through the database; here `queued_memories` stays empty unless `queue_memory` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from lore.backends.fake.matching import matches
from lore.embed import Embedder, Vectors
from lore.ports.search import KINDS, Entry, IndexStats, SourceRecord, Stored

__all__ = ["FakeSearchIndex"]


@dataclass
class _Row:
    id: int
    entry: Entry
    vector: Vectors | None = None

    def live(self, scopes: Sequence[str], now: float) -> bool:
        expires = self.entry.expires_at
        return self.entry.scope in scopes and (expires is None or expires > now)


class FakeSearchIndex:
    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._rows: dict[int, _Row] = {}
        self._records: dict[tuple[str, str], SourceRecord] = {}
        self._queue: dict[int, str | None] = {}
        self._hidden: set[tuple[str, str, str]] = set()
        self._model = ""
        self._next_id = 1

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @contextmanager
    def batch(self) -> Iterator[None]:
        # Rows are copied too: embedding changes them in place.
        rows = {i: _Row(r.id, r.entry, r.vector) for i, r in self._rows.items()}
        saved = (rows, dict(self._records), dict(self._queue))
        try:
            yield
        except BaseException:
            self._rows, self._records, self._queue = saved
            raise

    # -- writing --------------------------------------------------------------------------

    def put(self, entries: Iterable[Entry]) -> list[int]:
        entries = list(entries)
        for entry in entries:
            if entry.kind not in KINDS:
                raise ValueError(f"unknown entry kind {entry.kind!r}")
        ids = []
        for entry in entries:
            self._remove(_same_place(entry))  # writing an entry again replaces it
            self._rows[self._next_id] = _Row(self._next_id, entry)
            ids.append(self._next_id)
            self._next_id += 1
        return ids

    def replace_source(
        self, kind: str, source: str, entries: Sequence[Entry], record: SourceRecord | None
    ) -> None:
        with self.batch():
            self.remove_source(kind, source)
            self.put(entries)
            if record is not None:
                self.replace_source_record(record)

    def replace_source_record(self, record: SourceRecord) -> None:
        self._records[(record.kind, record.source)] = record

    def remove_source(self, kind: str, source: str) -> int:
        self._records.pop((kind, source), None)
        return self._remove(lambda e: (e.kind, e.source) == (kind, source))

    def remove_memory(self, memory_id: int) -> bool:
        self._queue.pop(memory_id, None)
        return (
            self._remove(lambda e: (e.kind, e.source, e.locator) == ("memory", "", memory_id)) > 0
        )

    def entries_matching(self, match: Callable[[str], bool]) -> list[int]:
        return [
            row.id
            for row in self._rows.values()
            if match(row.entry.text) or match(row.entry.context) or match(row.entry.extra)
        ]

    def remove_entries(self, entry_ids: Sequence[int]) -> int:
        gone = [entry_id for entry_id in entry_ids if self._rows.pop(entry_id, None) is not None]
        return len(gone)

    def hide(self, kind: str, source: str, marks: Iterable[str]) -> None:
        self._hidden.update((kind, source, mark) for mark in marks)

    def hidden(self, kind: str) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        for hidden_kind, source, mark in self._hidden:
            if hidden_kind == kind:
                found.setdefault(source, set()).add(mark)
        return {source: frozenset(marks) for source, marks in found.items()}

    def clear(self, *, requeue_memories: bool = False) -> None:
        self._rows.clear()
        self._records.clear()
        self._queue.clear()

    def _remove(self, doomed: Callable[[Entry], bool]) -> int:
        ids = [row.id for row in self._rows.values() if doomed(row.entry)]
        for entry_id in ids:
            del self._rows[entry_id]
        return len(ids)

    # -- memory queue and source records ----------------------------------------------------

    def queue_memory(self, memory_id: int, scope: str | None) -> None:
        """What a memory write does to the local index, for a test that needs it."""
        self._queue[memory_id] = scope

    def queued_memories(self, limit: int = 500) -> list[tuple[int, str | None]]:
        return sorted(self._queue.items())[:limit]

    def has_queued_memories(self) -> bool:
        return bool(self._queue)

    def dequeue_memories(self, memory_ids: Sequence[int]) -> None:
        for memory_id in memory_ids:
            self._queue.pop(memory_id, None)

    def source_records(self, kind: str) -> dict[str, SourceRecord]:
        return {source: r for (k, source), r in self._records.items() if k == kind}

    def source_record(self, kind: str, source: str) -> SourceRecord | None:
        return self._records.get((kind, source))

    # -- vectors ----------------------------------------------------------------------------

    def pending_vectors(self, *, since: float | None = None, kinds: Sequence[str] = KINDS) -> int:
        return sum(
            row.vector is None
            and row.entry.kind in kinds
            and (since is None or row.entry.at >= since)
            for row in self._rows.values()
        )

    def embed_pending(
        self,
        *,
        batch: int = 16,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
        since: float | None = None,
    ) -> int:
        if self._model != self._embedder.name:
            for row in self._rows.values():
                row.vector = None  # another model's vectors are useless
            self._model = self._embedder.name
        waiting = [
            row
            for row in self._rows.values()
            if row.vector is None and (since is None or row.entry.at >= since)
        ]
        waiting = waiting if limit is None else waiting[:limit]
        for start in range(0, len(waiting), max(1, batch)):
            rows = waiting[start : start + max(1, batch)]
            vectors = self._embedder.embed_passages([_passage(row.entry) for row in rows])
            for row, vector in zip(rows, vectors, strict=True):
                row.vector = vector.astype(np.float32)
            if progress is not None:
                progress(len(rows))
        return len(waiting)

    # -- queries ----------------------------------------------------------------------------

    def text_search(
        self, scopes: Sequence[str], query: str, *, limit: int, now: float
    ) -> list[int]:
        scored = []
        for row in self._rows.values():
            if row.live(scopes, now):
                entry = row.entry
                score = 2 * matches(query, _shown(entry)) + matches(query, entry.extra)
                if score:
                    scored.append((-score, row.id))
        return [entry_id for _, entry_id in sorted(scored)[:limit]]

    def vector_search(
        self, scopes: Sequence[str], query: Vectors, *, limit: int, now: float
    ) -> list[tuple[int, float]]:
        scored = [
            (float(np.dot(row.vector, query.reshape(-1))), row.id)
            for row in self._rows.values()
            if row.vector is not None and row.live(scopes, now)
        ]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(entry_id, score) for score, entry_id in scored[: max(0, limit)]]

    def vectors_of(self, scope: str, ids: Sequence[int]) -> dict[int, Vectors]:
        found = {}
        for entry_id in ids:
            row = self._rows.get(entry_id)
            if row is not None and row.vector is not None and row.entry.scope == scope:
                found[entry_id] = row.vector.reshape(-1)
        return found

    def facts_of(self, scope: str, session_id: str) -> dict[int, list[str]]:
        # The fake keeps no memories beside it: no message has facts to join its key.
        return {}

    def superseded_in(self, scope: str, session_id: str) -> dict[int, int]:
        return {}  # no memories beside it, as for facts_of

    def fetch(self, ids: Sequence[int]) -> dict[int, Stored]:
        found = {}
        for entry_id in ids:
            row = self._rows.get(entry_id)
            if row is not None:
                e = row.entry
                found[entry_id] = Stored(
                    entry_id, e.scope, e.kind, e.source, e.locator, e.at, e.speaker, e.text,
                    e.about_start, e.about_end,
                )  # fmt: skip
        return found

    def stats(self) -> IndexStats:
        entries = dict.fromkeys(KINDS, 0)
        sources: dict[str, set[object]] = {kind: set() for kind in KINDS}
        for row in self._rows.values():
            e = row.entry
            entries[e.kind] += 1
            sources[e.kind].add(e.locator if e.kind == "memory" else e.source)
        return IndexStats(
            entries=entries,
            sources={kind: len(found) for kind, found in sources.items()},
            scopes=len({row.entry.scope for row in self._rows.values()}),
            vectors=sum(row.vector is not None for row in self._rows.values()),
            pending_vectors=self.pending_vectors(),
            queued_memories=len(self._queue),
            embedder=self._model,
        )


def _same_place(new: Entry) -> Callable[[Entry], bool]:
    return lambda old: (old.kind, old.source, old.locator) == (new.kind, new.source, new.locator)


def _shown(entry: Entry) -> str:
    return f"{entry.speaker}: {entry.text}" if entry.speaker else entry.text


def _passage(entry: Entry) -> str:
    return f"{entry.context}\n{_shown(entry)}" if entry.context else _shown(entry)
