"""The structured long-term memory, and the only code that runs SQL on its tables.

A memory is one short fact in one conversation scope. Updating supersedes (the old
version stays in the history, out of every prompt); forgetting erases the text of every
version from the table, the search index and the audit history, then checkpoints the WAL
so no copy of it survives in the database files. Every change is audited.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from lore.backends.local.database import Database
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.memories import (
    KINDS,
    ActivePage,
    AuditEntry,
    Draft,
    ImportResult,
    Memory,
    Source,
    check_write,
    clean_author,
    content_key,
    iso,
    make_draft,
    parse_record,
    valid_id,
)
from lore.text import index_terms, match_expression

__all__ = ["SQLiteMemoryStore"]

_LIVE = "status = 'active' AND (expires_at IS NULL OR expires_at > :now)"
_BLOCK_ORDER = "(kind = 'profile') DESC, updated_at DESC, id DESC"


class SQLiteMemoryStore:
    """Memories, per scope. Each public write is one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

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
        """Store a fact; an exact duplicate in the scope returns the existing memory and False."""
        check_write(scope, via)
        draft = make_draft(content, kind, keywords, author, source, expires_at)
        with self._db.atomic() as conn:
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
        with self._db.atomic() as conn:
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
        with self._db.atomic() as conn:
            memory = self._live(scope, memory_id)
            chain = [
                int(row[0])
                for row in conn.execute(
                    "WITH RECURSIVE chain(id) AS (SELECT ? UNION ALL SELECT m.id FROM memories m"
                    " JOIN chain c ON m.superseded_by = c.id) SELECT id FROM chain",
                    (memory.id,),
                )
            ]
            marks = ",".join("?" * len(chain))
            conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", chain)
            conn.execute(
                "UPDATE memories SET content = '', keywords = '[]', content_key = NULL,"
                f" status = 'forgotten', updated_at = ? WHERE id IN ({marks})",
                [iso(now), *chain],
            )
            conn.execute(
                f"UPDATE memory_audit SET detail = NULL WHERE memory_id IN ({marks})", chain
            )
            self._audit(conn, memory.id, scope, "forget", by, via, now, {"erased": chain})
            # FTS5 before 3.42 keeps a deleted row's tokens in its segments (and writes them
            # again as a tombstone) until a merge; only a full merge guarantees they are gone.
            conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        if not self._db.conn.in_transaction:
            # The WAL still holds the old pages; fold it in and truncate it.
            self._db.checkpoint()
        return chain

    def matching(self, match: Callable[[str], bool]) -> tuple[list[int], list[int]]:
        """Memories (of any scope, in any state but forgotten) whose text `match`es, and the
        audit rows whose detail does: every copy the table holds of a text."""
        memories = [
            int(row["id"])
            for row in self._db.conn.execute(
                "SELECT id, content, keywords FROM memories WHERE status != 'forgotten'"
            )
            if match(row["content"]) or match(row["keywords"])
        ]
        audits = [
            int(row["id"])
            for row in self._db.conn.execute(
                "SELECT id, detail FROM memory_audit WHERE detail IS NOT NULL"
            )
            if match(row["detail"])
        ]
        return memories, audits

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
        with self._db.atomic() as conn:
            if memory_ids:
                marks = ",".join("?" * len(memory_ids))
                conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", memory_ids)
                conn.execute(
                    "UPDATE memories SET content = '', keywords = '[]', content_key = NULL,"
                    f" status = 'forgotten', updated_at = ? WHERE id IN ({marks})",
                    [iso(now), *memory_ids],
                )
                conn.execute(
                    f"UPDATE memory_audit SET detail = NULL WHERE memory_id IN ({marks})",
                    memory_ids,
                )
                scopes = conn.execute(
                    f"SELECT id, scope FROM memories WHERE id IN ({marks})", memory_ids
                ).fetchall()
                for row in scopes:
                    self._audit(
                        conn,
                        row["id"],
                        row["scope"],
                        "forget",
                        by,
                        via,
                        now,
                        {"erased": [row["id"]]},
                    )
            if audit_ids:
                marks = ",".join("?" * len(audit_ids))
                conn.execute(
                    f"UPDATE memory_audit SET detail = NULL WHERE id IN ({marks})", audit_ids
                )
            conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self._db.atomic():
            yield
        if not self._db.conn.in_transaction:
            self._db.checkpoint()  # a forget inside left the old pages in the WAL

    def compact(self) -> bool:
        return self._db.vacuum()

    def import_(
        self, scope: str, lines: Iterable[str], *, by: str, via: str, now: datetime
    ) -> ImportResult:
        """Read `export` lines back; all or nothing. Ids are kept when free."""
        check_write(scope, via)
        records = [parse_record(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        added: list[int] = []
        present: list[int] = []
        with self._db.atomic() as conn:
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

    # -- reading ------------------------------------------------------------------------

    def get(self, scope: str, memory_id: int) -> Memory:
        """A memory of this scope, in any state but forgotten."""
        row = None
        if valid_id(memory_id):
            row = self._db.conn.execute(
                "SELECT * FROM memories WHERE id = ? AND scope = ? AND status != 'forgotten'",
                (memory_id, scope),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"there is no memory #{memory_id} in this conversation")
        return _memory(row)

    def active(self, scope: str, *, now: datetime, limit: int | None = None) -> list[Memory]:
        """Unexpired active memories in block order: profile first, then most recently updated."""
        rows = self._db.conn.execute(
            f"SELECT * FROM memories WHERE scope = :scope AND {_LIVE} ORDER BY {_BLOCK_ORDER}"
            " LIMIT :limit",
            {"scope": scope, "now": iso(now), "limit": -1 if limit is None else limit},
        )
        return [_memory(row) for row in rows]

    def active_page(self, scope: str, *, now: datetime, limit: int) -> ActivePage:
        """The first `limit` memories in block order and how many are live in all: the
        count kept by the m007 triggers, less those expired (read from an index that holds
        only memories with an expiry), so no read grows with the scope."""
        with self._db.atomic(immediate=False) as conn:  # one snapshot for both reads
            (total,) = conn.execute(
                "SELECT coalesce((SELECT active FROM memory_counts WHERE scope = :scope), 0)"
                " - (SELECT count(*) FROM memories WHERE scope = :scope AND status = 'active'"
                " AND expires_at IS NOT NULL AND expires_at <= :now)",
                {"scope": scope, "now": iso(now)},
            ).fetchone()
            return ActivePage(self.active(scope, now=now, limit=limit), int(total))

    def live_count(self, scope: str, *, now: datetime) -> int:
        """Unexpired active memories of a scope, counted row by row (what the kept count
        must always equal)."""
        (total,) = self._db.conn.execute(
            f"SELECT count(*) FROM memories WHERE scope = :scope AND {_LIVE}",
            {"scope": scope, "now": iso(now)},
        ).fetchone()
        return int(total)

    def search(self, scope: str, query: str, *, now: datetime, limit: int = 10) -> list[Memory]:
        """Active memories of this scope matching any word of `query`, best first."""
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self._db.conn.execute(
            "SELECT memories.* FROM memory_fts JOIN memories ON memories.id = memory_fts.rowid"
            " WHERE memory_fts MATCH :match AND memories.scope = :scope"
            " AND memories.status = 'active'"
            " AND (memories.expires_at IS NULL OR memories.expires_at > :now)"
            " ORDER BY bm25(memory_fts, 0.0, 2.0, 1.0, 1.0), memories.updated_at DESC"
            " LIMIT :limit",
            {
                "match": f'scope_tag: "{_scope_tag(scope)}" AND ({expression})',
                "scope": scope,
                "now": iso(now),
                "limit": max(1, min(limit, 100)),
            },
        )
        return [_memory(row) for row in rows]

    def history(self, scope: str, memory_id: int) -> list[AuditEntry]:
        """The audit trail of a memory's whole chain of versions, oldest first."""
        conn = self._db.conn
        if not self._exists(conn, memory_id, scope):
            raise NotFoundError(f"there is no memory #{memory_id} in this conversation")
        rows = conn.execute(
            "WITH RECURSIVE later(id) AS (SELECT :id UNION SELECT m.superseded_by FROM memories m"
            " JOIN later ON m.id = later.id WHERE m.superseded_by IS NOT NULL),"
            " chain(id) AS (SELECT id FROM later UNION SELECT m.id FROM memories m"
            " JOIN chain ON m.superseded_by = chain.id)"
            " SELECT * FROM memory_audit WHERE memory_id IN (SELECT id FROM chain) ORDER BY id",
            {"id": memory_id},
        )
        return [_audit_entry(row) for row in rows]

    def recent_changes(self, scope: str, *, limit: int = 5) -> list[AuditEntry]:
        """The scope's latest audit entries, newest first (what /memory reports)."""
        rows = self._db.conn.execute(
            "SELECT * FROM memory_audit WHERE scope = ? ORDER BY id DESC LIMIT ?",
            (scope, max(1, limit)),
        )
        return [_audit_entry(row) for row in rows]

    def export(self, scope: str) -> list[str]:
        """Every active memory of the scope (expired included) as JSON Lines, by id."""
        rows = self._db.conn.execute(
            "SELECT * FROM memories WHERE scope = ? AND status = 'active' ORDER BY id", (scope,)
        )
        return [json.dumps(_memory(row).to_record(), ensure_ascii=False) for row in rows]

    # -- internals ----------------------------------------------------------------------

    def _replace(
        self, conn: sqlite3.Connection, old: Memory, draft: Draft, via: str, now: datetime
    ) -> Memory:
        conn.execute("UPDATE memories SET status = 'superseded' WHERE id = ?", (old.id,))
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (old.id,))
        new_id = self._insert(conn, old.scope, draft, old.created_at, now)
        conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (new_id, old.id))
        detail = draft.detail(replaces=old.id)
        self._audit(conn, new_id, old.scope, "update", draft.author, via, now, detail)
        return self._row(conn, new_id)

    def _insert(
        self,
        conn: sqlite3.Connection,
        scope: str,
        draft: Draft,
        created_at: datetime,
        updated_at: datetime,
        memory_id: int | None = None,
    ) -> int:
        source, expires = draft.source or Source(""), draft.expires_at
        cursor = conn.execute(
            "INSERT INTO memories (id, scope, content, kind, keywords, author, source_session,"
            " source_message, created_at, updated_at, expires_at, content_key)"
            " VALUES (?, ?, ?, ?, ?, ?, nullif(?, ''), ?, ?, ?, ?, ?)",
            (
                *(memory_id, scope, draft.content, draft.kind),
                *(json.dumps(draft.keywords, ensure_ascii=False), draft.author),
                *(source.session_id, source.message_index, iso(created_at), iso(updated_at)),
                *(None if expires is None else iso(expires), content_key(draft.content)),
            ),
        )
        new_id = int(cursor.lastrowid or 0)
        terms = index_terms(draft.content)
        keywords = " ".join(f"{t.words} {t.grams}" for t in map(index_terms, draft.keywords))
        conn.execute(
            "INSERT INTO memory_fts (rowid, scope_tag, words, grams, keywords)"
            " VALUES (?, ?, ?, ?, ?)",
            (new_id, _scope_tag(scope), terms.words, terms.grams, keywords),
        )
        return new_id

    def _audit(
        self,
        conn: sqlite3.Connection,
        memory_id: int,
        scope: str,
        action: str,
        actor: str,
        via: str,
        now: datetime,
        detail: dict[str, Any],
    ) -> None:
        conn.execute(
            "INSERT INTO memory_audit (memory_id, scope, action, actor, via, at, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                scope,
                action,
                clean_author(actor),
                via,
                iso(now),
                json.dumps(detail, ensure_ascii=False),
            ),
        )

    def _exists(self, conn: sqlite3.Connection, memory_id: int, scope: str | None = None) -> bool:
        """Whether the id is taken (in `scope`, if given), whatever the memory's state."""
        if not valid_id(memory_id):
            return False
        row = conn.execute(
            "SELECT 1 FROM memories WHERE id = ? AND scope = coalesce(?, scope)", (memory_id, scope)
        ).fetchone()
        return row is not None

    def _duplicate(self, conn: sqlite3.Connection, scope: str, content: str) -> Memory | None:
        row = conn.execute(
            "SELECT * FROM memories WHERE scope = ? AND content_key = ? AND status = 'active'",
            (scope, content_key(content)),
        ).fetchone()
        return None if row is None else _memory(row)

    def _live(self, scope: str, memory_id: int) -> Memory:
        memory = self.get(scope, memory_id)
        if memory.status == "superseded":
            raise InvalidInputError(
                f"#{memory_id} is an old version, replaced by #{memory.superseded_by}"
            )
        return memory

    def _row(self, conn: sqlite3.Connection, memory_id: int) -> Memory:
        return _memory(conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone())


def _scope_tag(scope: str) -> str:
    """A token for the scope inside the index, so a search reads only its own scope."""
    digest = hashlib.blake2b(scope.encode("utf-8"), digest_size=8).digest()
    return f"scope{int.from_bytes(digest, 'big')}"


def _audit_entry(row: sqlite3.Row) -> AuditEntry:
    return AuditEntry(
        row["id"],
        row["memory_id"],
        row["action"],
        row["actor"],
        row["via"],
        datetime.fromisoformat(row["at"]),
        None if row["detail"] is None else json.loads(row["detail"]),
    )


def _memory(row: sqlite3.Row) -> Memory:
    session = row["source_session"]
    return Memory(
        id=row["id"],
        scope=row["scope"],
        content=row["content"],
        kind=row["kind"],
        keywords=tuple(json.loads(row["keywords"])),
        author=row["author"],
        source=None if session is None else Source(session, row["source_message"]),
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        expires_at=None if row["expires_at"] is None else datetime.fromisoformat(row["expires_at"]),
        status=row["status"],
        superseded_by=row["superseded_by"],
    )
