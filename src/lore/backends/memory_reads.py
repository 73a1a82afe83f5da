"""How a memory store reads, the same on every store: what is not found and how it is
worded, which times must be aware, the limits of a search and of a list of changes, and
what an export line or a forget-everywhere match is made of.

A store subclasses `MemoryReads` (through `MemoryWrites`) and gives the queries as hooks;
each hook gets a connection from `_reading` (or one snapshot from `_snapshot`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Generic, TypeVar

from lore.errors import NotFoundError
from lore.ports.memories import ActivePage, AuditEntry, Memory, iso, valid_id

__all__ = ["MemoryReads"]

Conn = TypeVar("Conn")


class MemoryReads(ABC, Generic[Conn]):
    """The read flow of a memory store over connections of type `Conn`."""

    def get(self, scope: str, memory_id: int) -> Memory:
        """A memory of this scope, in any state but forgotten (NotFoundError otherwise)."""
        with self._reading() as conn:
            memory = self._find(conn, memory_id) if valid_id(memory_id) else None
        if memory is None or memory.scope != scope or memory.status == "forgotten":
            raise _not_found(memory_id)
        return memory

    def active(self, scope: str, *, now: datetime, limit: int | None = None) -> list[Memory]:
        """Unexpired active memories in block order: profile first, then most recently updated."""
        iso(now)
        with self._reading() as conn:
            return self._active(conn, scope, now, limit)

    def active_page(self, scope: str, *, now: datetime, limit: int | None) -> ActivePage:
        """The first `limit` memories in block order (None: all of them) and how many are
        live in all, read from one snapshot."""
        iso(now)
        with self._snapshot() as conn:
            return ActivePage(
                self._active(conn, scope, now, limit), self._live_total(conn, scope, now)
            )

    def search(self, scope: str, query: str, *, now: datetime, limit: int = 10) -> list[Memory]:
        """Active memories of this scope matching any word of `query`, best first."""
        iso(now)
        with self._reading() as conn:
            return self._ranked(conn, scope, query, now, max(1, min(limit, 100)))

    def history(self, scope: str, memory_id: int) -> list[AuditEntry]:
        """The audit trail of a memory's whole chain of versions, oldest first."""
        with self._reading() as conn:
            if not self._exists(conn, memory_id, scope):
                raise _not_found(memory_id)
            return self._trail(conn, memory_id)

    def recent_changes(self, scope: str, *, limit: int = 5) -> list[AuditEntry]:
        """The scope's latest audit entries, newest first (what /memory reports)."""
        with self._reading() as conn:
            return self._recent(conn, scope, max(1, limit))

    def export(self, scope: str) -> list[str]:
        """Every active memory of the scope (expired included) as JSON Lines, by id."""
        with self._reading() as conn:
            memories = self._every_active(conn, scope)
        return [json.dumps(memory.to_record(), ensure_ascii=False) for memory in memories]

    def scopes(self) -> list[str]:
        """Every conversation holding an active memory (expired ones count), sorted."""
        with self._reading() as conn:
            return self._scopes(conn)

    def matching(self, match: Callable[[str], bool]) -> tuple[list[int], list[int]]:
        """Memories (of any scope, in any state but forgotten) whose text or keywords
        `match`, and the audit rows whose detail does: every copy the store holds of a
        text. Keywords and details are matched as their JSON text."""
        with self._reading() as conn:
            memories, audits = self._texts(conn)
        return (
            [
                memory_id
                for memory_id, content, words in memories
                if match(content) or match(_json(list(words)))
            ],
            [audit_id for audit_id, detail in audits if match(_json(detail))],
        )

    # -- the flow's own steps ---------------------------------------------------------------

    def _exists(self, conn: Conn, memory_id: int, scope: str | None = None) -> bool:
        """Whether the id is taken (in `scope`, if given), whatever the memory's state."""
        memory = self._find(conn, memory_id) if valid_id(memory_id) else None
        return memory is not None and scope in (None, memory.scope)

    def _row(self, conn: Conn, memory_id: int) -> Memory:
        """The memory `memory_id`, which is there."""
        memory = self._find(conn, memory_id)
        assert memory is not None, memory_id
        return memory

    # -- the queries each store gives ---------------------------------------------------

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Conn]:
        """A connection to read from (inside a write transaction: that transaction's)."""

    def _snapshot(self) -> AbstractContextManager[Conn]:
        """A connection whose reads all see one moment (by default, `_reading`'s)."""
        return self._reading()

    @abstractmethod
    def _find(self, conn: Conn, memory_id: int) -> Memory | None:
        """The memory with this (valid) id, of any scope and in any state."""

    @abstractmethod
    def _active(self, conn: Conn, scope: str, now: datetime, limit: int | None) -> list[Memory]:
        """The scope's unexpired active memories in block order, at most `limit`."""

    @abstractmethod
    def _live_total(self, conn: Conn, scope: str, now: datetime) -> int:
        """How many unexpired active memories the scope holds."""

    @abstractmethod
    def _ranked(
        self, conn: Conn, scope: str, query: str, now: datetime, limit: int
    ) -> list[Memory]:
        """The scope's unexpired active memories matching `query`, best first."""

    @abstractmethod
    def _trail(self, conn: Conn, memory_id: int) -> list[AuditEntry]:
        """The audit entries of the memory's whole chain (later and earlier versions)."""

    @abstractmethod
    def _recent(self, conn: Conn, scope: str, limit: int) -> list[AuditEntry]:
        """The scope's latest `limit` audit entries, newest first."""

    @abstractmethod
    def _every_active(self, conn: Conn, scope: str) -> list[Memory]:
        """The scope's active memories, expired ones included, by id."""

    @abstractmethod
    def _scopes(self, conn: Conn) -> list[str]:
        """The scopes holding an active memory, sorted."""

    @abstractmethod
    def _texts(
        self, conn: Conn
    ) -> tuple[list[tuple[int, str, Sequence[str]]], list[tuple[int, dict[str, Any]]]]:
        """(id, content, keywords) of every memory not forgotten, and (id, detail) of every
        audit entry that still has one."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _not_found(memory_id: int) -> NotFoundError:
    return NotFoundError(f"there is no memory #{memory_id} in this conversation")
