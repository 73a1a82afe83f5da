"""Memories in a dict: versions chained by `superseded_by`, an audit list, a plain word
and character match for `search`. Every public write is all or nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from lore.backends.fake.matching import matches
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.memories import (
    ActivePage,
    AuditEntry,
    Draft,
    ImportResult,
    Memory,
    Source,
    check_write,
    clean_author,
    iso,
    make_draft,
    parse_record,
    valid_id,
)

__all__ = ["FakeMemoryStore"]


class FakeMemoryStore:
    def __init__(self) -> None:
        self._memories: dict[int, Memory] = {}
        self._audit: list[tuple[str, AuditEntry]] = []  # (scope, entry)

    # -- writing ------------------------------------------------------------------------

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
        check_write(scope, via)
        draft = make_draft(content, kind, keywords, author, source, expires_at)
        with self._atomic():
            existing = self._duplicate(scope, draft.content)
            if existing is not None:
                if existing.expires_at is None or existing.expires_at > now:
                    return existing, False
                return self._replace(existing, draft, via, now), True
            memory = self._insert(scope, draft, now, now)
            self._log(memory.id, scope, "add", draft.author, via, now, draft.detail())
            return memory, True

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
        check_write(scope, via)
        with self._atomic():
            old = self._live(scope, memory_id)
            words = old.keywords if keywords is None else keywords
            draft = make_draft(content, kind or old.kind, words, author, source, expires_at)
            twin = self._duplicate(scope, draft.content)
            if twin is not None and twin.id != old.id:
                raise InvalidInputError(f"#{twin.id} already says exactly that")
            return self._replace(old, draft, via, now)

    def forget(self, scope: str, memory_id: int, *, by: str, via: str, now: datetime) -> list[int]:
        check_write(scope, via)
        with self._atomic():
            memory = self._live(scope, memory_id)
            chain = self._versions(memory.id)
            for erased in chain:
                self._memories[erased] = replace(
                    self._memories[erased],
                    content="",
                    keywords=(),
                    status="forgotten",
                    updated_at=now,
                )
            self._audit = [
                (s, replace(e, detail=None) if e.memory_id in chain else e) for s, e in self._audit
            ]
            self._log(memory.id, scope, "forget", by, via, now, {"erased": chain})
            return chain

    def batch(self) -> AbstractContextManager[None]:
        return self._atomic()

    def matching(self, match: Callable[[str], bool]) -> tuple[list[int], list[int]]:
        memories = [
            m.id
            for m in self._memories.values()
            if m.status != "forgotten" and (match(m.content) or any(map(match, m.keywords)))
        ]
        audit = [
            e.id
            for _, e in self._audit
            if e.detail is not None and match(json.dumps(e.detail, ensure_ascii=False))
        ]
        return memories, audit

    def erase(
        self,
        memory_ids: Sequence[int],
        audit_ids: Sequence[int],
        *,
        by: str,
        via: str,
        now: datetime,
    ) -> None:
        with self._atomic():
            for memory_id in memory_ids:
                memory = self._memories.get(memory_id)
                if memory is not None:
                    self._memories[memory_id] = replace(
                        memory, content="", keywords=(), status="forgotten", updated_at=now
                    )
            gone = set(audit_ids)
            self._audit = [
                (s, replace(e, detail=None) if e.id in gone or e.memory_id in memory_ids else e)
                for s, e in self._audit
            ]

    def compact(self) -> bool:
        return True  # nothing is kept anywhere but in these dictionaries

    def import_(
        self, scope: str, lines: Iterable[str], *, by: str, via: str, now: datetime
    ) -> ImportResult:
        check_write(scope, via)
        records = [parse_record(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        added: list[int] = []
        present: list[int] = []
        with self._atomic():
            for record in records:
                existing = self._duplicate(scope, record.draft.content)
                if existing is not None:
                    present.append(existing.id)
                    continue
                wanted = record.memory_id
                if wanted is not None and wanted in self._memories:
                    wanted = None
                memory = self._insert(
                    scope, record.draft, record.created_at, record.updated_at, wanted
                )
                self._log(memory.id, scope, "import", by, via, now, record.draft.detail())
                added.append(memory.id)
        return ImportResult(added, present)

    # -- reading ------------------------------------------------------------------------

    def get(self, scope: str, memory_id: int) -> Memory:
        memory = self._memories.get(memory_id) if valid_id(memory_id) else None
        if memory is None or memory.scope != scope or memory.status == "forgotten":
            raise NotFoundError(f"there is no memory #{memory_id} in this conversation")
        return memory

    def active(self, scope: str, *, now: datetime, limit: int | None = None) -> list[Memory]:
        found = sorted(
            (m for m in self._memories.values() if m.scope == scope and _live(m, now)),
            key=lambda m: (m.kind == "profile", m.updated_at, m.id),
            reverse=True,
        )
        return found if limit is None else found[:limit]

    def active_page(self, scope: str, *, now: datetime, limit: int) -> ActivePage:
        every = self.active(scope, now=now)
        return ActivePage(every[:limit], len(every))

    def search(self, scope: str, query: str, *, now: datetime, limit: int = 10) -> list[Memory]:
        scored = [
            (score, memory)
            for memory in self._memories.values()
            if memory.scope == scope and _live(memory, now)
            for score in [matches(query, " ".join((memory.content, *memory.keywords)))]
            if score
        ]
        scored.sort(key=lambda pair: (pair[0], pair[1].updated_at, pair[1].id), reverse=True)
        return [memory for _, memory in scored[: max(1, min(limit, 100))]]

    def history(self, scope: str, memory_id: int) -> list[AuditEntry]:
        memory = self._memories.get(memory_id) if valid_id(memory_id) else None
        if memory is None or memory.scope != scope:
            raise NotFoundError(f"there is no memory #{memory_id} in this conversation")
        latest = memory
        while latest.superseded_by is not None:
            latest = self._memories[latest.superseded_by]
        chain = set(self._versions(latest.id))
        return [entry for _, entry in self._audit if entry.memory_id in chain]

    def recent_changes(self, scope: str, *, limit: int = 5) -> list[AuditEntry]:
        mine = [entry for s, entry in self._audit if s == scope]
        return mine[::-1][: max(1, limit)]

    def export(self, scope: str) -> list[str]:
        return [
            json.dumps(memory.to_record(), ensure_ascii=False)
            for memory in sorted(self._memories.values(), key=lambda m: m.id)
            if memory.scope == scope and memory.status == "active"
        ]

    def scopes(self) -> list[str]:
        return sorted({m.scope for m in self._memories.values() if m.status == "active"})

    # -- internals ----------------------------------------------------------------------

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """A copy to put back if anything inside raises: a savepoint at every depth, so a
        failed write inside a batch is undone alone."""
        saved = (dict(self._memories), list(self._audit))
        try:
            yield
        except BaseException:
            self._memories, self._audit = saved
            raise

    def _replace(self, old: Memory, draft: Draft, via: str, now: datetime) -> Memory:
        new = self._insert(old.scope, draft, old.created_at, now)
        self._memories[old.id] = replace(old, status="superseded", superseded_by=new.id)
        detail = draft.detail(replaces=old.id)
        self._log(new.id, old.scope, "update", draft.author, via, now, detail)
        return new

    def _insert(
        self,
        scope: str,
        draft: Draft,
        created_at: datetime,
        updated_at: datetime,
        memory_id: int | None = None,
    ) -> Memory:
        for moment in (created_at, updated_at):
            iso(moment)  # aware, as every backend insists
        new_id = memory_id or max(self._memories, default=0) + 1
        memory = Memory(
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
        self._memories[new_id] = memory
        return memory

    def _log(
        self,
        memory_id: int,
        scope: str,
        action: str,
        actor: str,
        via: str,
        now: datetime,
        detail: dict[str, Any],
    ) -> None:
        iso(now)
        entry = AuditEntry(
            len(self._audit) + 1, memory_id, action, clean_author(actor), via, now, detail
        )
        self._audit.append((scope, entry))

    def _versions(self, memory_id: int) -> list[int]:
        """The memory and every earlier version of it, newest first."""
        chain = [memory_id]
        for later in chain:
            chain.extend(m.id for m in self._memories.values() if m.superseded_by == later)
        return chain

    def _duplicate(self, scope: str, content: str) -> Memory | None:
        for memory in self._memories.values():
            if memory.scope == scope and memory.status == "active" and memory.content == content:
                return memory
        return None

    def _live(self, scope: str, memory_id: int) -> Memory:
        memory = self.get(scope, memory_id)
        if memory.status == "superseded":
            raise InvalidInputError(
                f"#{memory_id} is an old version, replaced by #{memory.superseded_by}"
            )
        return memory


def _live(memory: Memory, now: datetime) -> bool:
    return memory.status == "active" and (memory.expires_at is None or memory.expires_at > now)
