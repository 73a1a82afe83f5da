"""The structured long-term memory on PostgreSQL, and the only SQL on its tables.

The same semantics as the SQLite store: updating supersedes (the old version stays in
the history), forgetting erases the text of every version from the table, the index
terms and the audit history, and every change is audited. Writes to one scope are
serialised by an advisory lock on the scope, so two workers noting the same fact at
once end with one memory, as one SQLite writer would. The write flow is
`lore.backends.memory_writes` (shared with SQLite); the SQL under it is here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from lore.backends.memory_writes import MemoryWrites
from lore.backends.postgres.bm25 import COMMON_ROWS, Bm25Ranking, ColumnWeights
from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.ports.memories import (
    AuditEntry,
    Draft,
    Memory,
    Source,
    clean_author,
    content_key,
)
from lore.text import index_terms

__all__ = ["PostgresMemoryStore"]

_LIVE = "status = 'active' AND (expires_at IS NULL OR expires_at > %(now)s)"
_BLOCK_ORDER = "(kind = 'profile') DESC, updated_at DESC, id DESC"
# The SQLite store's bm25 column weights: words count twice CJK grams and keywords.
_WEIGHTS = ColumnWeights(words=2.0, grams=1.0, extra=1.0)
_TERMS = (
    "setweight(to_tsvector('lore_terms', %(words)s), 'A')"
    " || setweight(to_tsvector('lore_terms', %(grams)s), 'B')"
    " || setweight(to_tsvector('lore_terms', %(keywords)s), 'C')"
)


class PostgresMemoryStore(MemoryWrites[Connection]):
    """Memories, per scope. Each public write is one transaction."""

    def __init__(self, db: PostgresDatabase, *, common_rows: int | None = COMMON_ROWS) -> None:
        """`common_rows`: a query word held by more memories than this may be left to
        score only the memories its rarer words find (None: never)."""
        self._db = db
        self._ranking = Bm25Ranking(
            "memories",
            _WEIGHTS,
            size=_table_size,
            holding=_holding,
            then="updated_at DESC, id",
            columns=", updated_at",
            common_rows=common_rows,
        )

    @property
    def pruned_searches(self) -> int:
        """Searches answered without ranking every memory holding a word of the query
        (common words pruned, see `bm25`)."""
        return self._ranking.pruned

    # -- the reads are MemoryReads', the writes MemoryWrites' (SQL below) --------------

    def compact(self) -> bool:
        """Rewrite the tables so no old row version keeps an erased text."""
        return self._db.vacuum(["memories", "memory_audit", "search_entries"])

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Several writes as one transaction (each takes its scope's lock inside it)."""
        with self._db.atomic():
            yield

    # -- the SQL of the read flow -------------------------------------------------------

    def _reading(self) -> AbstractContextManager[Connection]:
        return self._db.connection()

    @contextmanager
    def _snapshot(self) -> Iterator[Connection]:
        with self._db.atomic() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn

    def _find(self, conn: Connection, memory_id: int) -> Memory | None:
        row = conn.execute("SELECT * FROM memories WHERE id = %s", (memory_id,)).fetchone()
        return None if row is None else _memory(row)

    def _active(
        self, conn: Connection, scope: str, now: datetime, limit: int | None
    ) -> list[Memory]:
        rows = conn.execute(
            f"SELECT * FROM memories WHERE scope = %(scope)s AND {_LIVE}"
            f" ORDER BY {_BLOCK_ORDER} LIMIT %(limit)s",
            {"scope": scope, "now": now, "limit": limit},
        )
        return [_memory(row) for row in rows]

    def _live_total(self, conn: Connection, scope: str, now: datetime) -> int:
        row = conn.execute(
            f"SELECT count(*) AS n FROM memories WHERE scope = %(scope)s AND {_LIVE}",
            {"scope": scope, "now": now},
        ).fetchone()
        return 0 if row is None else int(row["n"])

    def _ranked(
        self, conn: Connection, scope: str, query: str, now: datetime, limit: int
    ) -> list[Memory]:
        """Best BM25 first (ranked as the SQLite store ranks them, see `bm25`), then the
        latest updated."""
        ids = self._ranking.best(
            conn,
            query,
            where=f"scope = %(scope)s AND {_LIVE}",
            arguments={"scope": scope, "now": now},
            limit=limit,
        )
        if not ids:
            return []
        rows = conn.execute("SELECT * FROM memories WHERE id = ANY(%s)", (ids,)).fetchall()
        found = {int(row["id"]): _memory(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def _trail(self, conn: Connection, memory_id: int) -> list[AuditEntry]:
        rows = conn.execute(
            "WITH RECURSIVE later(id) AS (SELECT %(id)s::bigint UNION SELECT m.superseded_by"
            " FROM memories m JOIN later ON m.id = later.id WHERE m.superseded_by IS NOT NULL),"
            " chain(id) AS (SELECT id FROM later UNION SELECT m.id FROM memories m"
            " JOIN chain ON m.superseded_by = chain.id)"
            " SELECT * FROM memory_audit WHERE memory_id IN (SELECT id FROM chain) ORDER BY id",
            {"id": memory_id},
        )
        return [_audit_entry(row) for row in rows]

    def _recent(self, conn: Connection, scope: str, limit: int) -> list[AuditEntry]:
        rows = conn.execute(
            "SELECT * FROM memory_audit WHERE scope = %s ORDER BY id DESC LIMIT %s",
            (scope, limit),
        )
        return [_audit_entry(row) for row in rows]

    def _every_active(self, conn: Connection, scope: str) -> list[Memory]:
        rows = conn.execute(
            "SELECT * FROM memories WHERE scope = %s AND status = 'active' ORDER BY id", (scope,)
        )
        return [_memory(row) for row in rows]

    def _scopes(self, conn: Connection) -> list[str]:
        rows = conn.execute(
            "SELECT DISTINCT scope FROM memories WHERE status = 'active' ORDER BY scope"
        )
        return [str(row["scope"]) for row in rows]

    def _texts(
        self, conn: Connection
    ) -> tuple[list[tuple[int, str, Sequence[str]]], list[tuple[int, dict[str, Any]]]]:
        memories = conn.execute(
            "SELECT id, content, keywords FROM memories WHERE status != 'forgotten'"
        )
        audits = conn.execute("SELECT id, detail FROM memory_audit WHERE detail IS NOT NULL")
        return (
            [(int(row["id"]), str(row["content"]), row["keywords"]) for row in memories],
            [(int(row["id"]), row["detail"]) for row in audits],
        )

    # -- the SQL of the write flow ------------------------------------------------------

    @contextmanager
    def _writing(self, scope: str | None) -> Iterator[Connection]:
        """A write transaction holding the scope's lock (one writer per scope at a time)."""
        with self._db.atomic() as conn:
            if scope is not None:
                self._db.lock(conn, f"memories:{scope}")
            yield conn

    def _retire(self, conn: Connection, memory_id: int) -> None:
        conn.execute(
            "UPDATE memories SET status = 'superseded', terms = NULL WHERE id = %s", (memory_id,)
        )

    def _link(self, conn: Connection, old_id: int, new_id: int) -> None:
        conn.execute("UPDATE memories SET superseded_by = %s WHERE id = %s", (new_id, old_id))

    def _chain(self, conn: Connection, memory_id: int) -> list[int]:
        rows = conn.execute(
            "WITH RECURSIVE chain(id) AS (SELECT %s::bigint UNION ALL SELECT m.id"
            " FROM memories m JOIN chain c ON m.superseded_by = c.id) SELECT id FROM chain",
            (memory_id,),
        )
        return [int(row["id"]) for row in rows]

    def _erase(
        self, conn: Connection, memory_ids: list[int], now: datetime
    ) -> list[tuple[int, str]]:
        rows = conn.execute(
            "UPDATE memories SET content = '', keywords = '[]', content_key = NULL,"
            " terms = NULL, status = 'forgotten', updated_at = %s WHERE id = ANY(%s)"
            " RETURNING id, scope",
            (now, memory_ids),
        ).fetchall()
        conn.execute(
            "UPDATE memory_audit SET detail = NULL WHERE memory_id = ANY(%s)", (memory_ids,)
        )
        return [(int(row["id"]), str(row["scope"])) for row in rows]

    def _clear_audits(self, conn: Connection, audit_ids: list[int]) -> None:
        conn.execute("UPDATE memory_audit SET detail = NULL WHERE id = ANY(%s)", (audit_ids,))

    def _insert(
        self,
        conn: Connection,
        scope: str,
        draft: Draft,
        created_at: datetime,
        updated_at: datetime,
        memory_id: int | None = None,
    ) -> int:
        source = draft.source or Source("")
        terms = index_terms(draft.content)
        keywords = " ".join(f"{t.words} {t.grams}" for t in map(index_terms, draft.keywords))
        values = {
            "id": memory_id,
            "scope": scope,
            "content": draft.content,
            "kind": draft.kind,
            "keywords_json": Jsonb(list(draft.keywords)),
            "author": draft.author,
            "session": source.session_id,
            "message": source.message_index,
            "created_at": created_at,
            "updated_at": updated_at,
            "expires_at": draft.expires_at,
            "content_key": content_key(draft.content),
            "words": terms.words,
            "grams": terms.grams,
            "keywords": keywords,
        }
        columns = (
            "scope, content, kind, keywords, author, source_session, source_message,"
            " created_at, updated_at, expires_at, content_key, terms"
        )
        row_values = (
            "%(scope)s, %(content)s, %(kind)s, %(keywords_json)s, %(author)s,"
            " nullif(%(session)s, ''), %(message)s, %(created_at)s, %(updated_at)s,"
            f" %(expires_at)s, %(content_key)s, {_TERMS}"
        )
        if memory_id is None:
            sql = f"INSERT INTO memories ({columns}) VALUES ({row_values}) RETURNING id"
        else:
            sql = f"INSERT INTO memories (id, {columns}) VALUES (%(id)s, {row_values}) RETURNING id"
        row = conn.execute(sql, values).fetchone()
        assert row is not None
        if memory_id is not None:
            # A kept id must never be handed out again by the identity sequence.
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('memories', 'id'),"
                " greatest(%s, (SELECT last_value FROM memories_id_seq)))",
                (memory_id,),
            )
        return int(row["id"])

    def _audit(
        self,
        conn: Connection,
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
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (memory_id, scope, action, clean_author(actor), via, now, Jsonb(detail)),
        )

    def _duplicate(self, conn: Connection, scope: str, content: str) -> Memory | None:
        row = conn.execute(
            "SELECT * FROM memories WHERE scope = %s AND content_key = %s AND status = 'active'",
            (scope, content_key(content)),
        ).fetchone()
        return None if row is None else _memory(row)


def _audit_entry(row: DictRow) -> AuditEntry:
    return AuditEntry(
        row["id"],
        row["memory_id"],
        row["action"],
        row["actor"],
        row["via"],
        row["at"],
        row["detail"],
    )


def _table_size(conn: Connection) -> tuple[int, float]:
    """Active memories, every scope's (expired ones too: SQLite's word index holds them),
    and their total length in tokens (each with its scope tag, as FTS5 counts it)."""
    row = conn.execute(
        "SELECT count(*) AS n, coalesce(sum(tokens + 1), 0) AS length FROM memories"
        " WHERE status = 'active'"
    ).fetchone()
    return (0, 0.0) if row is None else (int(row["n"]), float(row["length"]))


def _holding(conn: Connection, term: str) -> int:
    """How many active memories hold a term (in the columns it may match), for BM25."""
    row = conn.execute(
        "SELECT count(*) AS n FROM memories WHERE status = 'active'"
        " AND terms @@ to_tsquery('lore_terms', %s)",
        (term,),
    ).fetchone()
    return 0 if row is None else int(row["n"])


def _memory(row: DictRow) -> Memory:
    session = row["source_session"]
    return Memory(
        id=row["id"],
        scope=row["scope"],
        content=row["content"],
        kind=row["kind"],
        keywords=tuple(row["keywords"]),
        author=row["author"],
        source=None if session is None else Source(session, row["source_message"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        expires_at=row["expires_at"],
        status=row["status"],
        superseded_by=row["superseded_by"],
    )
