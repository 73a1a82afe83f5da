"""The search index on PostgreSQL, and the only SQL on its tables: the same methods as
the SQLite index, so `lore.search.hybrid` ranks over either one.

Text is matched through the pre-tokenised `terms` (see `tsquery`) and ranked by BM25
(see `bm25`), as SQLite's FTS5 ranks it; vectors live beside
them in pgvector and are searched through the HNSW index, with pgvector's iterative
scan so a scope filter never starves the result. Workers embed in parallel: each takes
a batch of unembedded rows `FOR UPDATE SKIP LOCKED`, so none is embedded twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from lore.backends.local.search_index import searchable_text
from lore.backends.postgres.bm25 import COMMON_ROWS, Bm25Ranking, ColumnWeights
from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.embed import Embedder, Vectors
from lore.errors import StoreError
from lore.ports.search import KINDS, Entry, IndexStats, SourceRecord, Stored
from lore.text import index_terms

__all__ = ["PostgresSearchIndex"]

# The column's type, vector(384): the bundled multilingual-e5-small. A smaller model's
# vectors are padded with zeros, which changes no cosine.
DIMENSIONS = 384
_TERMS = (
    "setweight(to_tsvector('lore_terms', %(words)s), 'A')"
    " || setweight(to_tsvector('lore_terms', %(grams)s), 'B')"
    " || setweight(to_tsvector('lore_terms', %(extra)s), 'C')"
)
_LIVE = "(expires_at IS NULL OR expires_at > %(now)s)"
# The SQLite index's bm25 column weights: a match in the text (words or CJK grams) weighs
# more than one in what surrounds it.
_WEIGHTS = ColumnWeights(words=2.0, grams=2.0, extra=0.75)


class PostgresSearchIndex:
    """`common_rows`: a query term held by more entries than this may be left to score
    only the entries its rarer terms find (None: every matching entry is ranked)."""

    def __init__(
        self,
        db: PostgresDatabase,
        embedder: Embedder | None = None,
        *,
        common_rows: int | None = COMMON_ROWS,
    ) -> None:
        self._db = db
        self._embedder = embedder
        self._ranking = Bm25Ranking(
            "search_entries",
            _WEIGHTS,
            size=_table_size,
            holding=_holding,
            common_rows=common_rows,
        )

    @property
    def db(self) -> PostgresDatabase:
        return self._db

    @property
    def pruned_searches(self) -> int:
        """Text searches answered without ranking every entry holding a word of the query
        (common words pruned, see `bm25`)."""
        return self._ranking.pruned

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from lore.embed import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    # -- writing --------------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Several writes as one transaction."""
        with self._db.atomic():
            yield

    def put(self, entries: Iterable[Entry]) -> list[int]:
        """Index entries, replacing any with the same (kind, source, locator)."""
        rows = []
        for entry in entries:
            if entry.kind not in KINDS:
                raise ValueError(f"unknown entry kind {entry.kind!r}")
            terms = index_terms(searchable_text(entry.speaker, entry.text))
            extra = index_terms(entry.extra)
            rows.append(
                {
                    **vars(entry),
                    "words": terms.words,
                    "grams": terms.grams,
                    "extra": f"{extra.words} {extra.grams}".strip(),
                }
            )
        if not rows:
            return []
        ids: list[int] = []
        with self._db.atomic() as conn, conn.cursor() as cursor:
            # Deleted first, then written in order: a source's entries get consecutive ids,
            # which is how a hit finds its neighbouring messages.
            cursor.executemany(
                "DELETE FROM search_entries WHERE kind = %(kind)s AND source = %(source)s"
                " AND locator = %(locator)s",
                rows,
            )
            cursor.executemany(
                "INSERT INTO search_entries (scope, kind, source, locator, at, expires_at,"
                " speaker, text, context, about_start, about_end, terms) VALUES (%(scope)s,"
                " %(kind)s, %(source)s, %(locator)s, %(at)s, %(expires_at)s, %(speaker)s,"
                f" %(text)s, %(context)s, %(about_start)s, %(about_end)s, {_TERMS}) RETURNING id",
                rows,
                returning=True,
            )
            while True:
                row = cursor.fetchone()
                assert row is not None
                ids.append(int(row["id"]))
                if not cursor.nextset():
                    break
        return ids

    def replace_source(
        self, kind: str, source: str, entries: Sequence[Entry], record: SourceRecord | None
    ) -> None:
        """Swap every entry of one file or session for `entries`, and remember its state."""
        with self._db.atomic():
            self.remove_source(kind, source)
            self.put(entries)
            if record is not None:
                self.replace_source_record(record)

    def replace_source_record(self, record: SourceRecord) -> None:
        """Note a file's new size and mtime when its content did not change."""
        with self._db.atomic() as conn:
            conn.execute(
                "INSERT INTO search_sources (kind, source, scope, mtime_ns, size, digest)"
                " VALUES (%(kind)s, %(source)s, %(scope)s, %(mtime_ns)s, %(size)s, %(digest)s)"
                " ON CONFLICT (kind, source) DO UPDATE SET scope = excluded.scope,"
                " mtime_ns = excluded.mtime_ns, size = excluded.size, digest = excluded.digest",
                vars(record),
            )

    def remove_source(self, kind: str, source: str) -> int:
        """Drop every entry of a file or session (and its record); returns how many."""
        with self._db.atomic() as conn:
            conn.execute(
                "DELETE FROM search_sources WHERE kind = %s AND source = %s", (kind, source)
            )
            cursor = conn.execute(
                "DELETE FROM search_entries WHERE kind = %s AND source = %s", (kind, source)
            )
            return cursor.rowcount

    def remove_memory(self, memory_id: int) -> bool:
        with self._db.atomic() as conn:
            conn.execute("DELETE FROM search_queue WHERE memory_id = %s", (memory_id,))
            cursor = conn.execute(
                "DELETE FROM search_entries WHERE kind = 'memory' AND source = '' AND locator = %s",
                (memory_id,),
            )
            return cursor.rowcount > 0

    def entries_matching(self, match: Callable[[str], bool]) -> list[int]:
        """Entries whose text (or the context embedded with it) `match`es."""
        rows = self._db.fetch_all("SELECT id, text, context FROM search_entries")
        return [int(r["id"]) for r in rows if match(r["text"] or "") or match(r["context"] or "")]

    def remove_entries(self, entry_ids: Sequence[int]) -> int:
        """Drop these entries, words and vectors included (the row holds all three)."""
        with self._db.atomic() as conn:
            cursor = conn.execute(
                "DELETE FROM search_entries WHERE id = ANY(%s)", (list(entry_ids),)
            )
            return cursor.rowcount

    def hide(self, kind: str, source: str, marks: Iterable[str]) -> None:
        with self._db.atomic() as conn:
            for mark in marks:
                conn.execute(
                    "INSERT INTO search_hidden (kind, source, mark) VALUES (%s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    (kind, source, mark),
                )

    def hidden(self, kind: str) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        rows = self._db.fetch_all("SELECT source, mark FROM search_hidden WHERE kind = %s", (kind,))
        for row in rows:
            found.setdefault(row["source"], set()).add(row["mark"])
        return {source: frozenset(marks) for source, marks in found.items()}

    def clear(self, *, requeue_memories: bool = False) -> None:
        """Empty the index (vectors included); optionally queue every active memory again,
        so `sources.catch_up_memories` re-indexes them."""
        with self._db.atomic() as conn:
            conn.execute("DELETE FROM search_entries")
            conn.execute("DELETE FROM search_sources")
            conn.execute("DELETE FROM search_queue")
            if requeue_memories:
                conn.execute(
                    "INSERT INTO search_queue (memory_id)"
                    " SELECT id FROM memories WHERE status = 'active'"
                )

    # -- memory queue and source records ----------------------------------------------------

    def queued_memories(self, limit: int = 500) -> list[tuple[int, str | None]]:
        """Memory ids written since the last catch-up, with their scope (None: gone)."""
        rows = self._db.fetch_all(
            "SELECT q.memory_id, m.scope FROM search_queue q"
            " LEFT JOIN memories m ON m.id = q.memory_id ORDER BY q.memory_id LIMIT %s",
            (limit,),
        )
        return [(int(r["memory_id"]), r["scope"]) for r in rows]

    def has_queued_memories(self) -> bool:
        return self._db.fetch_one("SELECT 1 AS one FROM search_queue LIMIT 1") is not None

    def dequeue_memories(self, memory_ids: Sequence[int]) -> None:
        with self._db.atomic() as conn:
            conn.execute("DELETE FROM search_queue WHERE memory_id = ANY(%s)", (list(memory_ids),))

    def source_records(self, kind: str) -> dict[str, SourceRecord]:
        rows = self._db.fetch_all(
            "SELECT kind, source, scope, mtime_ns, size, digest FROM search_sources"
            " WHERE kind = %s",
            (kind,),
        )
        return {r["source"]: SourceRecord(**r) for r in rows}

    def source_record(self, kind: str, source: str) -> SourceRecord | None:
        row = self._db.fetch_one(
            "SELECT kind, source, scope, mtime_ns, size, digest FROM search_sources"
            " WHERE kind = %s AND source = %s",
            (kind, source),
        )
        return None if row is None else SourceRecord(**row)

    # -- vectors ----------------------------------------------------------------------------

    def pending_vectors(self, *, since: float | None = None, kinds: Sequence[str] = KINDS) -> int:
        row = self._db.fetch_one(
            "SELECT count(*) AS n FROM search_entries WHERE embedding IS NULL"
            " AND at >= %s AND kind = ANY(%s)",
            (float("-inf") if since is None else since, list(kinds)),
        )
        return 0 if row is None else int(row["n"])

    def embed_pending(
        self,
        *,
        batch: int = 32,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
        since: float | None = None,
    ) -> int:
        """Embed entries that have no vector yet (only those dated `since` or later), in
        batches; returns how many were done. Rows another worker is embedding are left
        to it."""
        done = 0
        self.check_model()
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            with self._db.atomic() as conn:
                rows = conn.execute(
                    "SELECT id, speaker, text, context FROM search_entries"
                    " WHERE embedding IS NULL AND at >= %s ORDER BY id LIMIT %s"
                    " FOR UPDATE SKIP LOCKED",
                    (float("-inf") if since is None else since, size),
                ).fetchall()
                if not rows:
                    break
                passages = [_passage(r["speaker"], r["text"], r["context"]) for r in rows]
                vectors = self.embedder.embed_passages(passages)
                self._store(conn, [int(r["id"]) for r in rows], vectors)
            done += len(rows)
            if progress is not None:
                progress(len(rows))
        return done

    def store_vectors(self, ids: Sequence[int], vectors: Vectors) -> None:
        """Save vectors for entries (gone entries are skipped)."""
        if ids:
            with self._db.atomic() as conn:
                self._store(conn, ids, vectors)

    def check_model(self) -> None:
        """Vectors of another model are useless: drop them all when the model changes."""
        name = self.embedder.name
        if self.embedder.dim > DIMENSIONS:
            raise StoreError(
                f"the PostgreSQL index holds {DIMENSIONS}-dimensional vectors;"
                f" {name} makes {self.embedder.dim}"
            )
        row = self._db.fetch_one("SELECT value FROM search_state WHERE key = 'embedder'")
        if row is not None and row["value"] == name:
            return
        with self._db.atomic() as conn:
            self._db.lock(conn, "search:model")
            stored = conn.execute("SELECT value FROM search_state WHERE key = 'embedder'")
            current = stored.fetchone()
            if current is not None and current["value"] == name:
                return  # another worker switched first
            if current is not None:
                conn.execute("UPDATE search_entries SET embedding = NULL")
            conn.execute(
                "INSERT INTO search_state (key, value) VALUES ('embedder', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (name,),
            )

    # -- queries ----------------------------------------------------------------------------

    def text_search(
        self, scopes: Sequence[str], query: str, *, limit: int, now: float
    ) -> list[int]:
        """Entry ids in these scopes matching any term of `query`, best BM25 first (FTS5's
        BM25, with the whole index's statistics, as the SQLite index ranks them; common
        words pruned as there, see `bm25`)."""
        if not scopes or limit <= 0:
            return []
        with self._db.connection() as conn:
            return self._ranking.best(
                conn,
                query,
                where=f"scope = ANY(%(scopes)s) AND {_LIVE}",
                arguments={"scopes": list(scopes), "now": now},
                limit=limit,
            )

    def vector_search(
        self, scopes: Sequence[str], query: Vectors, *, limit: int, now: float
    ) -> list[tuple[int, float]]:
        """Entry ids in these scopes nearest to `query` (cosine), best first."""
        if not scopes or limit <= 0:
            return []
        with self._db.atomic() as conn:
            # Keep walking the graph until enough rows pass the scope filter.
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(limit * 2, 1000))}")
            rows = conn.execute(
                "WITH nearest AS MATERIALIZED (SELECT id, embedding <=> %(vector)s::vector"
                " AS distance FROM search_entries WHERE scope = ANY(%(scopes)s)"
                f" AND embedding IS NOT NULL AND {_LIVE} ORDER BY distance LIMIT %(limit)s)"
                " SELECT id, 1 - distance AS score FROM nearest ORDER BY distance, id",
                {"vector": _literal(query), "scopes": list(scopes), "now": now, "limit": limit},
            ).fetchall()
        return [(int(r["id"]), float(r["score"])) for r in rows]

    def vectors_of(self, scope: str, ids: Sequence[int]) -> dict[int, Vectors]:
        """Vectors of some entries of a scope (those already embedded)."""
        # pgvector's binary form (int16 dimensions, int16 unused, big-endian float4s):
        # read straight into numpy, where the text form costs a parse per number.
        rows = self._db.fetch_all(
            "SELECT id, vector_send(embedding) AS vector FROM search_entries"
            " WHERE scope = %s AND id = ANY(%s) AND embedding IS NOT NULL",
            (scope, list(ids)),
        )
        dim = self.embedder.dim
        return {
            int(r["id"]): np.frombuffer(r["vector"], dtype=">f4", offset=4, count=dim).astype(
                np.float32
            )
            for r in rows
        }

    def facts_of(self, scope: str, session_id: str) -> dict[int, list[str]]:
        """The active memories extracted from a session's messages, by message index (the
        memory's source link): they join that message's search key."""
        rows = self._db.fetch_all(
            "SELECT source_message, content FROM memories WHERE scope = %s AND"
            " source_session = %s AND source_message IS NOT NULL AND status = 'active'"
            " ORDER BY id",
            (scope, session_id),
        )
        facts: dict[int, list[str]] = {}
        for row in rows:
            facts.setdefault(int(row["source_message"]), []).append(str(row["content"]))
        return facts

    def superseded_in(self, scope: str, session_id: str) -> dict[int, int]:
        from lore.backends.memory_writes import current_versions

        rows = self._db.fetch_all(
            "SELECT id, source_session, source_message, superseded_by, status FROM memories"
            " WHERE scope = %s AND status IN ('active', 'superseded')",
            (scope,),
        )
        return current_versions(
            [
                (int(r["id"]), r["source_session"], r["source_message"], r["superseded_by"],
                 str(r["status"]))
                for r in rows
            ],
            session_id,
        )  # fmt: skip

    def fetch(self, ids: Sequence[int]) -> dict[int, Stored]:
        if not ids:
            return {}
        rows = self._db.fetch_all(
            "SELECT id, scope, kind, source, locator, at, speaker, text, about_start, about_end"
            " FROM search_entries WHERE id = ANY(%s)",
            (list(ids),),
        )
        return {int(r["id"]): Stored(**r) for r in rows}

    def stats(self) -> IndexStats:
        kinds = dict.fromkeys(KINDS, 0)
        sources = dict.fromkeys(KINDS, 0)
        with self._db.connection() as conn:
            for row in conn.execute(
                "SELECT kind, count(*) AS n, count(DISTINCT CASE WHEN kind = 'memory'"
                " THEN locator::text ELSE source END) AS distinct_sources,"
                " count(embedding) AS vectors FROM search_entries GROUP BY kind"
            ):
                kinds[row["kind"]], sources[row["kind"]] = row["n"], row["distinct_sources"]
            totals = conn.execute(
                "SELECT (SELECT count(DISTINCT scope) FROM search_entries) AS scopes,"
                " (SELECT count(embedding) FROM search_entries) AS vectors,"
                " (SELECT count(*) FROM search_entries WHERE embedding IS NULL) AS pending,"
                " (SELECT count(*) FROM search_queue) AS queued,"
                " (SELECT value FROM search_state WHERE key = 'embedder') AS embedder"
            ).fetchone()
        assert totals is not None
        return IndexStats(
            kinds,
            sources,
            int(totals["scopes"]),
            int(totals["vectors"]),
            int(totals["pending"]),
            int(totals["queued"]),
            totals["embedder"] or "",
        )

    @staticmethod
    def _store(conn: Connection, ids: Sequence[int], vectors: Vectors) -> None:
        rows: list[dict[str, Any]] = [
            {"id": entry_id, "vector": _literal(vector)}
            for entry_id, vector in zip(ids, vectors, strict=True)
        ]
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE search_entries SET embedding = %(vector)s::vector WHERE id = %(id)s", rows
            )


def _table_size(conn: Connection) -> tuple[int, float]:
    """The index's entries and their total length in tokens (each with its scope tag, as
    FTS5 counts it), for BM25."""
    row = conn.execute(
        "SELECT count(*) AS n, coalesce(sum(tokens + 1), 0) AS length FROM search_entries"
    ).fetchone()
    return (0, 0.0) if row is None else (int(row["n"]), float(row["length"]))


def _holding(conn: Connection, term: str) -> int:
    """How many entries hold a term (in the columns it may match), for BM25."""
    row = conn.execute(
        "SELECT count(*) AS n FROM search_entries WHERE terms @@ to_tsquery('lore_terms', %s)",
        (term,),
    ).fetchone()
    return 0 if row is None else int(row["n"])


def _literal(vector: Vectors) -> str:
    """pgvector's text form, '[0.1,0.2,...]' (float32 needs 9 significant digits), padded
    with zeros to the column's size."""
    values = np.asarray(vector, dtype=np.float32).tolist()
    values += [0.0] * (DIMENSIONS - len(values))
    return "[" + ",".join(f"{x:.9g}" for x in values) + "]"


def _passage(speaker: str, text: str, context: str) -> str:
    body = searchable_text(speaker, text)
    return f"{context}\n{body}" if context else body
