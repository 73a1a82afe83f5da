"""How a memory store on a database writes, the same on every database: remember,
supersede, forget, erase and import, with the rules they share. An exact duplicate in the
scope is the memory already there (one that lapsed is replaced by the new version); a
correction keeps the old version in the history, out of every prompt; forgetting erases
the text of the whole chain of versions; every change is audited.

A store subclasses `MemoryWrites` and gives the SQL as hooks (its transaction and locks,
its search terms, its placeholders); the reads are `MemoryReads`', with their own hooks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, TypeVar

from lore.backends.memory_reads import MemoryReads
from lore.errors import InvalidInputError
from lore.ports.memories import (
    KINDS,
    Draft,
    ImportResult,
    Memory,
    Source,
    check_write,
    iso,
    make_draft,
    parse_record,
)

__all__ = ["MemoryWrites", "current_versions"]

Conn = TypeVar("Conn")


class MemoryWrites(MemoryReads[Conn], ABC):
    """The write flow of a memory store over connections of type `Conn`."""

    def remember(
        self,
        scope: str,
        content: str,
        *,
        kind: str = "fact",
        keywords: Iterable[str] = (),
        author: str,
        via: str,
        now: datetime,
        source: Source | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[Memory, bool]:
        """Store a fact; an exact duplicate in the scope returns the existing memory and False."""
        check_write(scope, via)
        iso(now)  # aware, or a clear error before anything is written
        draft = make_draft(content, kind, keywords, author, source, expires_at)
        with self._writing(scope) as conn:
            existing = self._duplicate(conn, scope, draft.content)
            if existing is not None:
                if existing.expires_at is None or existing.expires_at > now:
                    return existing, False
                # Noted again after it lapsed: the new version replaces the expired one.
                return self._replace(conn, existing, draft, via, now), True
            new_id = self._insert(conn, scope, draft, now, now)
            self._audit(conn, new_id, scope, "add", draft.author, via, now, draft.detail())
            return self._row(conn, new_id), True

    def supersede(
        self,
        scope: str,
        memory_id: int,
        content: str,
        *,
        kind: str | None = None,
        keywords: Iterable[str] | None = None,
        author: str,
        via: str,
        now: datetime,
        source: Source | None = None,
        expires_at: datetime | None = None,
    ) -> Memory:
        """Replace an active memory with a new version; the old one stays in the history."""
        check_write(scope, via)
        iso(now)
        with self._writing(scope) as conn:
            old = self._live(scope, memory_id)
            words = old.keywords if keywords is None else keywords
            # A kind from before kinds were fixed becomes "fact" when the memory changes.
            kind = kind or (old.kind if old.kind in KINDS else "fact")
            draft = make_draft(content, kind, words, author, source, expires_at)
            twin = self._duplicate(conn, scope, draft.content)
            if twin is not None and twin.id != old.id:
                raise InvalidInputError(f"#{twin.id} already says exactly that")
            return self._replace(conn, old, draft, via, now)

    def forget(self, scope: str, memory_id: int, *, by: str, via: str, now: datetime) -> list[int]:
        """Erase a memory and every earlier version of it; returns the erased ids."""
        check_write(scope, via)
        iso(now)
        with self._writing(scope) as conn:
            memory = self._live(scope, memory_id)
            chain = self._chain(conn, memory.id)
            self._erase(conn, chain, now)
            self._audit(conn, memory.id, scope, "forget", by, via, now, {"erased": chain})
        self._erased()
        return chain

    def erase(
        self,
        memory_ids: Sequence[int],
        audit_ids: Sequence[int],
        *,
        by: str,
        via: str,
        now: datetime,
    ) -> None:
        """Erase these memories' text and these audit details, whatever their scope and
        state (forget everywhere: the owner's purge of a text)."""
        iso(now)
        with self._writing(None) as conn:
            if memory_ids:
                for memory_id, scope in sorted(self._erase(conn, list(memory_ids), now)):
                    erased = {"erased": [memory_id]}
                    self._audit(conn, memory_id, scope, "forget", by, via, now, erased)
            if audit_ids:
                self._clear_audits(conn, list(audit_ids))

    def import_(
        self, scope: str, lines: Iterable[str], *, by: str, via: str, now: datetime
    ) -> ImportResult:
        """Read `export` lines back; all or nothing. Ids are kept when free."""
        check_write(scope, via)
        iso(now)
        records = [parse_record(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        added: list[int] = []
        present: list[int] = []
        with self._writing(scope) as conn:
            for record in records:
                existing = self._duplicate(conn, scope, record.draft.content)
                if existing is not None:
                    present.append(existing.id)
                    continue
                wanted = record.memory_id
                if wanted is not None and self._exists(conn, wanted):
                    wanted = None
                new_id = self._insert(
                    conn, scope, record.draft, record.created_at, record.updated_at, wanted
                )
                self._audit(conn, new_id, scope, "import", by, via, now, record.draft.detail())
                added.append(new_id)
        return ImportResult(added, present)

    # -- the flow's own steps ---------------------------------------------------------------

    def _replace(self, conn: Conn, old: Memory, draft: Draft, via: str, now: datetime) -> Memory:
        self._retire(conn, old.id)  # first: the new version may say exactly the same
        new_id = self._insert(conn, old.scope, draft, old.created_at, now)
        self._link(conn, old.id, new_id)
        detail = draft.detail(replaces=old.id)
        self._audit(conn, new_id, old.scope, "update", draft.author, via, now, detail)
        return self._row(conn, new_id)

    def _live(self, scope: str, memory_id: int) -> Memory:
        memory = self.get(scope, memory_id)
        if memory.status == "superseded":
            raise InvalidInputError(
                f"#{memory_id} is an old version, replaced by #{memory.superseded_by}"
            )
        return memory

    def _erased(self) -> None:
        """Called after a forget commits (a store may fold old pages away then)."""

    # -- the SQL each store gives -----------------------------------------------------------

    @abstractmethod
    def _writing(self, scope: str | None) -> AbstractContextManager[Conn]:
        """One write transaction; with a scope, the only writer of that scope meanwhile."""

    @abstractmethod
    def _duplicate(self, conn: Conn, scope: str, content: str) -> Memory | None:
        """The active memory of the scope saying exactly `content`."""

    @abstractmethod
    def _insert(
        self,
        conn: Conn,
        scope: str,
        draft: Draft,
        created_at: datetime,
        updated_at: datetime,
        memory_id: int | None = None,
    ) -> int:
        """Add an active memory (under `memory_id`, when given), searchable; its id."""

    @abstractmethod
    def _retire(self, conn: Conn, memory_id: int) -> None:
        """Mark a memory superseded and take it out of the search terms."""

    @abstractmethod
    def _link(self, conn: Conn, old_id: int, new_id: int) -> None:
        """Record that `new_id` superseded `old_id`."""

    @abstractmethod
    def _chain(self, conn: Conn, memory_id: int) -> list[int]:
        """The memory and every version it superseded, newest first."""

    @abstractmethod
    def _erase(self, conn: Conn, memory_ids: list[int], now: datetime) -> list[tuple[int, str]]:
        """Erase these memories' text, search terms and audit details; (id, scope) of each."""

    @abstractmethod
    def _clear_audits(self, conn: Conn, audit_ids: list[int]) -> None:
        """Erase the detail of these audit entries."""

    @abstractmethod
    def _audit(
        self,
        conn: Conn,
        memory_id: int,
        scope: str,
        action: str,
        actor: str,
        via: str,
        now: datetime,
        detail: dict[str, Any],
    ) -> None:
        """Append one audit entry."""


def current_versions(
    rows: list[tuple[int, str | None, int | None, int | None, str]], session_id: str
) -> dict[int, int]:
    """(id, source session, source message, superseded_by, status) of a scope's memories
    -> message index of `session_id` -> the active end of its memory's chain."""
    later = {row[0]: row[3] for row in rows if row[4] == "superseded" and row[3] is not None}
    active = {row[0] for row in rows if row[4] == "active"}
    found: dict[int, int] = {}
    for memory_id, session, message, _, status in rows:
        if status != "superseded" or session != session_id or message is None:
            continue
        current: int | None = memory_id
        for _ in range(len(later) + 1):
            if current is None or current in active:
                break
            current = later.get(current)
        if current is not None and current in active:
            found.setdefault(int(message), current)
    return found
