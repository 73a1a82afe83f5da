"""The structured long-term memory, and the only code that runs SQL on its tables.

A memory is one short fact in one conversation scope. Updating supersedes (the old
version stays in the history, out of every prompt); forgetting erases the text of every
version from the table, the search index and the audit history, then checkpoints the WAL
so no copy of it survives in the database files. Every change is audited. The write
flow is `lore.backends.memory_writes` (shared with PostgreSQL); the SQL under it is here.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import Any

from lore.backends.local.database import Database
from lore.backends.memory_writes import MemoryWrites
from lore.ports.memories import (
    AuditEntry,
    Draft,
    Memory,
    Source,
    clean_author,
    content_key,
    iso,
)
from lore.text import index_terms, match_expression

__all__ = ["SQLiteMemoryStore"]

_LIVE = "status = 'active' AND (expires_at IS NULL OR expires_at > :now)"
_BLOCK_ORDER = "(kind = 'profile') DESC, updated_at DESC, id DESC"


class SQLiteMemoryStore(MemoryWrites[sqlite3.Connection]):
    """Memories, per scope. Each public write is one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._fold_pending = False  # a forget inside a batch left old pages in the WAL

    # -- the reads are MemoryReads', the writes MemoryWrites' (SQL below) --------------

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self._db.atomic():
            yield
        if self._fold_pending and not self._db.conn.in_transaction:
            self._fold()  # a forget inside left the old pages in the WAL

    def compact(self) -> bool:
        return self._db.vacuum()

    # -- the SQL of the read flow -------------------------------------------------------

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self._db.conn)

    def _snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.atomic(immediate=False)  # one snapshot for every read inside

    def _find(self, conn: sqlite3.Connection, memory_id: int) -> Memory | None:
        row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else _memory(row)

    def _active(
        self, conn: sqlite3.Connection, scope: str, now: datetime, limit: int | None
    ) -> list[Memory]:
        rows = conn.execute(
            f"SELECT * FROM memories WHERE scope = :scope AND {_LIVE} ORDER BY {_BLOCK_ORDER}"
            " LIMIT :limit",
            {"scope": scope, "now": iso(now), "limit": -1 if limit is None else limit},
        )
        return [_memory(row) for row in rows]

    def _live_total(self, conn: sqlite3.Connection, scope: str, now: datetime) -> int:
        """The count kept by the m007 triggers, less those expired (read from an index
        that holds only memories with an expiry), so no read grows with the scope."""
        (total,) = conn.execute(
            "SELECT coalesce((SELECT active FROM memory_counts WHERE scope = :scope), 0)"
            " - (SELECT count(*) FROM memories WHERE scope = :scope AND status = 'active'"
            " AND expires_at IS NOT NULL AND expires_at <= :now)",
            {"scope": scope, "now": iso(now)},
        ).fetchone()
        return int(total)

    def live_count(self, scope: str, *, now: datetime) -> int:
        """Unexpired active memories of a scope, counted row by row (what the kept count
        must always equal)."""
        (total,) = self._db.conn.execute(
            f"SELECT count(*) FROM memories WHERE scope = :scope AND {_LIVE}",
            {"scope": scope, "now": iso(now)},
        ).fetchone()
        return int(total)

    def _ranked(
        self, conn: sqlite3.Connection, scope: str, query: str, now: datetime, limit: int
    ) -> list[Memory]:
        expression = match_expression(query)
        if expression is None:
            return []
        rows = conn.execute(
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
                "limit": limit,
            },
        )
        return [_memory(row) for row in rows]

    def _trail(self, conn: sqlite3.Connection, memory_id: int) -> list[AuditEntry]:
        rows = conn.execute(
            "WITH RECURSIVE later(id) AS (SELECT :id UNION SELECT m.superseded_by FROM memories m"
            " JOIN later ON m.id = later.id WHERE m.superseded_by IS NOT NULL),"
            " chain(id) AS (SELECT id FROM later UNION SELECT m.id FROM memories m"
            " JOIN chain ON m.superseded_by = chain.id)"
            " SELECT * FROM memory_audit WHERE memory_id IN (SELECT id FROM chain) ORDER BY id",
            {"id": memory_id},
        )
        return [_audit_entry(row) for row in rows]

    def _recent(self, conn: sqlite3.Connection, scope: str, limit: int) -> list[AuditEntry]:
        rows = conn.execute(
            "SELECT * FROM memory_audit WHERE scope = ? ORDER BY id DESC LIMIT ?", (scope, limit)
        )
        return [_audit_entry(row) for row in rows]

    def _every_active(self, conn: sqlite3.Connection, scope: str) -> list[Memory]:
        rows = conn.execute(
            "SELECT * FROM memories WHERE scope = ? AND status = 'active' ORDER BY id", (scope,)
        )
        return [_memory(row) for row in rows]

    def _scopes(self, conn: sqlite3.Connection) -> list[str]:
        rows = conn.execute(
            "SELECT DISTINCT scope FROM memories WHERE status = 'active' ORDER BY scope"
        )
        return [str(row[0]) for row in rows]

    def _texts(
        self, conn: sqlite3.Connection
    ) -> tuple[list[tuple[int, str, Sequence[str]]], list[tuple[int, dict[str, Any]]]]:
        memories = conn.execute(
            "SELECT id, content, keywords FROM memories WHERE status != 'forgotten'"
        )
        audits = conn.execute("SELECT id, detail FROM memory_audit WHERE detail IS NOT NULL")
        return (
            [(int(row[0]), str(row[1]), json.loads(row[2])) for row in memories],
            [(int(row[0]), json.loads(row[1])) for row in audits],
        )

    # -- the SQL of the write flow ------------------------------------------------------

    def _writing(self, scope: str | None) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.atomic()  # one writer at a time on the whole database

    def _retire(self, conn: sqlite3.Connection, memory_id: int) -> None:
        conn.execute("UPDATE memories SET status = 'superseded' WHERE id = ?", (memory_id,))
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (memory_id,))

    def _link(self, conn: sqlite3.Connection, old_id: int, new_id: int) -> None:
        conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (new_id, old_id))

    def _chain(self, conn: sqlite3.Connection, memory_id: int) -> list[int]:
        rows = conn.execute(
            "WITH RECURSIVE chain(id) AS (SELECT ? UNION ALL SELECT m.id FROM memories m"
            " JOIN chain c ON m.superseded_by = c.id) SELECT id FROM chain",
            (memory_id,),
        )
        return [int(row[0]) for row in rows]

    def _erase(
        self, conn: sqlite3.Connection, memory_ids: list[int], now: datetime
    ) -> list[tuple[int, str]]:
        marks = ",".join("?" * len(memory_ids))
        erased = [
            (int(row["id"]), str(row["scope"]))
            for row in conn.execute(
                f"SELECT id, scope FROM memories WHERE id IN ({marks})", memory_ids
            )
        ]
        conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", memory_ids)
        conn.execute(
            "UPDATE memories SET content = '', keywords = '[]', content_key = NULL,"
            f" status = 'forgotten', updated_at = ? WHERE id IN ({marks})",
            [iso(now), *memory_ids],
        )
        conn.execute(
            f"UPDATE memory_audit SET detail = NULL WHERE memory_id IN ({marks})", memory_ids
        )
        # FTS5 before 3.42 keeps a deleted row's tokens in its segments (and writes them
        # again as a tombstone) until a merge; only a full merge guarantees they are gone.
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        return erased

    def _erased(self) -> None:
        # The WAL still holds the old pages: fold it in and truncate it, now or (inside a
        # batch) once the batch commits.
        self._fold_pending = True
        if not self._db.conn.in_transaction:
            self._fold()

    def _fold(self) -> None:
        try:
            self._db.checkpoint()
            self._fold_pending = False
        except sqlite3.OperationalError as error:
            # What was erased is committed; a statement still open on this connection (a
            # search reading in another thread) only defers the fold to the next forget
            # or batch.
            if "locked" not in str(error):
                raise

    def _clear_audits(self, conn: sqlite3.Connection, audit_ids: list[int]) -> None:
        marks = ",".join("?" * len(audit_ids))
        conn.execute(f"UPDATE memory_audit SET detail = NULL WHERE id IN ({marks})", audit_ids)

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

    def _duplicate(self, conn: sqlite3.Connection, scope: str, content: str) -> Memory | None:
        row = conn.execute(
            "SELECT * FROM memories WHERE scope = ? AND content_key = ? AND status = 'active'",
            (scope, content_key(content)),
        ).fetchone()
        return None if row is None else _memory(row)


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
