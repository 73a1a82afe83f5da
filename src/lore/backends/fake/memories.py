"""Memories in a dict: versions chained by `superseded_by`, an audit list, a plain word
and character match for `search`. The rules are the flows' (`MemoryReads`,
`MemoryWrites`), as on every database; only the storage is a dict. Every public write
is all or nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from lore.backends.fake.matching import matches
from lore.backends.memory_writes import MemoryWrites
from lore.ports.memories import AuditEntry, Draft, Memory, clean_author

__all__ = ["FakeMemoryStore"]


@dataclass
class _Tables:
    memories: dict[int, Memory] = field(default_factory=dict)
    audit: list[tuple[str, AuditEntry]] = field(default_factory=list)  # (scope, entry)


class FakeMemoryStore(MemoryWrites[_Tables]):
    def __init__(self) -> None:
        self._tables = _Tables()

    def batch(self) -> AbstractContextManager[None]:
        return self._atomic()

    def compact(self) -> bool:
        return True  # nothing is kept anywhere but in these dictionaries

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """A copy to put back if anything inside raises: a savepoint at every depth, so a
        failed write inside a batch is undone alone."""
        tables = self._tables
        saved = (dict(tables.memories), list(tables.audit))
        try:
            yield
        except BaseException:
            tables.memories, tables.audit = saved
            raise

    # -- the read flow's queries ----------------------------------------------------------

    def _reading(self) -> AbstractContextManager[_Tables]:
        return nullcontext(self._tables)

    def _find(self, conn: _Tables, memory_id: int) -> Memory | None:
        return conn.memories.get(memory_id)

    def _active(self, conn: _Tables, scope: str, now: datetime, limit: int | None) -> list[Memory]:
        found = sorted(
            (m for m in conn.memories.values() if m.scope == scope and _live(m, now)),
            key=lambda m: (m.kind == "profile", m.updated_at, m.id),
            reverse=True,
        )
        return found if limit is None else found[:limit]

    def _live_total(self, conn: _Tables, scope: str, now: datetime) -> int:
        return len(self._active(conn, scope, now, None))

    def _ranked(
        self, conn: _Tables, scope: str, query: str, now: datetime, limit: int
    ) -> list[Memory]:
        scored = [
            (score, memory)
            for memory in conn.memories.values()
            if memory.scope == scope and _live(memory, now)
            for score in [matches(query, " ".join((memory.content, *memory.keywords)))]
            if score
        ]
        scored.sort(key=lambda pair: (pair[0], pair[1].updated_at, pair[1].id), reverse=True)
        return [memory for _, memory in scored[:limit]]

    def _trail(self, conn: _Tables, memory_id: int) -> list[AuditEntry]:
        latest = conn.memories[memory_id]
        while latest.superseded_by is not None:
            latest = conn.memories[latest.superseded_by]
        chain = set(self._chain(conn, latest.id))
        return [entry for _, entry in conn.audit if entry.memory_id in chain]

    def _recent(self, conn: _Tables, scope: str, limit: int) -> list[AuditEntry]:
        return [entry for s, entry in reversed(conn.audit) if s == scope][:limit]

    def _every_active(self, conn: _Tables, scope: str) -> list[Memory]:
        return [
            memory
            for memory in sorted(conn.memories.values(), key=lambda m: m.id)
            if memory.scope == scope and memory.status == "active"
        ]

    def _scopes(self, conn: _Tables) -> list[str]:
        return sorted({m.scope for m in conn.memories.values() if m.status == "active"})

    def _texts(
        self, conn: _Tables
    ) -> tuple[list[tuple[int, str, Sequence[str]]], list[tuple[int, dict[str, Any]]]]:
        return (
            [
                (m.id, m.content, m.keywords)
                for m in conn.memories.values()
                if m.status != "forgotten"
            ],
            [(e.id, e.detail) for _, e in conn.audit if e.detail is not None],
        )

    # -- the write flow's steps -----------------------------------------------------------

    @contextmanager
    def _writing(self, scope: str | None) -> Iterator[_Tables]:
        with self._atomic():
            yield self._tables

    def _duplicate(self, conn: _Tables, scope: str, content: str) -> Memory | None:
        for memory in conn.memories.values():
            if memory.scope == scope and memory.status == "active" and memory.content == content:
                return memory
        return None

    def _insert(
        self,
        conn: _Tables,
        scope: str,
        draft: Draft,
        created_at: datetime,
        updated_at: datetime,
        memory_id: int | None = None,
    ) -> int:
        new_id = memory_id or max(conn.memories, default=0) + 1
        conn.memories[new_id] = Memory(
            id=new_id,
            scope=scope,
            content=draft.content,
            kind=draft.kind,
            keywords=draft.keywords,
            author=draft.author,
            source=draft.source,
            created_at=created_at,
            updated_at=updated_at,
            expires_at=draft.expires_at,
            status="active",
        )
        return new_id

    def _retire(self, conn: _Tables, memory_id: int) -> None:
        conn.memories[memory_id] = replace(conn.memories[memory_id], status="superseded")

    def _link(self, conn: _Tables, old_id: int, new_id: int) -> None:
        conn.memories[old_id] = replace(conn.memories[old_id], superseded_by=new_id)

    def _chain(self, conn: _Tables, memory_id: int) -> list[int]:
        chain = [memory_id]
        for later in chain:
            chain.extend(m.id for m in conn.memories.values() if m.superseded_by == later)
        return chain

    def _erase(self, conn: _Tables, memory_ids: list[int], now: datetime) -> list[tuple[int, str]]:
        erased: list[tuple[int, str]] = []
        for memory_id in memory_ids:
            memory = conn.memories.get(memory_id)
            if memory is not None:
                conn.memories[memory_id] = replace(
                    memory, content="", keywords=(), status="forgotten", updated_at=now
                )
                erased.append((memory_id, memory.scope))
        gone = set(memory_ids)
        conn.audit = [
            (s, replace(e, detail=None) if e.memory_id in gone else e) for s, e in conn.audit
        ]
        return erased

    def _clear_audits(self, conn: _Tables, audit_ids: list[int]) -> None:
        gone = set(audit_ids)
        conn.audit = [(s, replace(e, detail=None) if e.id in gone else e) for s, e in conn.audit]

    def _audit(
        self,
        conn: _Tables,
        memory_id: int,
        scope: str,
        action: str,
        actor: str,
        via: str,
        now: datetime,
        detail: dict[str, Any],
    ) -> None:
        entry = AuditEntry(
            len(conn.audit) + 1, memory_id, action, clean_author(actor), via, now, detail
        )
        conn.audit.append((scope, entry))


def _live(memory: Memory, now: datetime) -> bool:
    return memory.status == "active" and (memory.expires_at is None or memory.expires_at > now)
