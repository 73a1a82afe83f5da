"""The one search index in `lore.db`, and the only code that runs SQL on its tables.

An entry is a memory, a chunk of a Markdown note, or one archived message; it knows its
scope, its source (memory id; file and line; session and message index) and its time.
Text goes into FTS5 as CJK-aware terms (`lore.text`) ranked by BM25; vectors are
stored as int8 rows and searched in numpy from an int8 matrix cached per scope and
process, grown by what is newer (`lore.backends.local.vectors`). Entries are searchable by text
as soon as they are written; vectors follow when `embed_pending` runs (in background).
Memory writes reach the index through triggers (see migration m003): removals at once,
additions through `search_queue`, which `sources.catch_up` drains.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from lore.backends.local import bm25
from lore.backends.local.database import Database
from lore.backends.local.vectors import VectorMatrix
from lore.backends.memory_writes import current_versions
from lore.embed import Embedder, Vectors, quantise
from lore.ports.search import KINDS, Entry, IndexStats, SourceRecord, Stored
from lore.text import index_terms, match_expression

__all__ = ["SearchIndex", "scope_tag"]

# BM25 column weights: scope_tag (never ranked), words, grams, and `keywords`, which holds
# extra text (a memory's keywords; a message's date and neighbouring turns): matches in
# the text itself, as words or CJK grams, weigh more than matches in what surrounds it.
_RANK = "bm25(0.0, 2.0, 2.0, 0.75)"
_LOAD_ROWS = 4096
# Below this share of the index, a search names its scopes inside the MATCH.
_TAG_SHARE = 0.5
# A query unit held by more rows than this may be left to score only what rarer units find.
_COMMON_ROWS = 1000


def scope_tag(scope: str) -> str:
    """A token for the scope inside the FTS table, so a search reads only its scopes."""
    digest = hashlib.blake2b(scope.encode("utf-8"), digest_size=8).digest()
    return f"scope{int.from_bytes(digest, 'big')}"


def searchable_text(speaker: str, text: str) -> str:
    return f"{speaker}: {text}" if speaker else text


class SearchIndex:
    def __init__(self, db: Database, embedder: Embedder | None = None) -> None:
        self._db = db
        self._embedder = embedder
        self._lock = threading.RLock()
        self._caches: dict[str, VectorMatrix] = {}
        self._generation = -1
        self._embed_lock = threading.Lock()
        self._sizes: dict[str, int] = {}  # entries per scope, for `_scope_share`
        self._total = 0
        self._sizes_at = -1
        self._frequencies: dict[str, int] = {}  # rows holding a query unit, see `_common`
        self._frequencies_at = -1

    @property
    def db(self) -> Database:
        return self._db

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from lore.embed import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Several writes as one transaction."""
        with self._db.atomic():
            yield

    # -- writing --------------------------------------------------------------------------

    def put(self, entries: Iterable[Entry]) -> list[int]:
        """Index entries, replacing any with the same (kind, source, locator)."""
        ids = []
        with self._db.atomic() as conn:
            for entry in entries:
                if entry.kind not in KINDS:
                    raise ValueError(f"unknown entry kind {entry.kind!r}")
                self._delete_where(
                    conn,
                    "kind = ? AND source = ? AND locator = ?",
                    (entry.kind, entry.source, entry.locator),
                )
                cursor = conn.execute(
                    "INSERT INTO search_entries (scope, kind, source, locator, at, expires_at,"
                    " speaker, text, context, about_start, about_end) VALUES (:scope, :kind,"
                    " :source, :locator, :at, :expires_at, :speaker, :text, :context,"
                    " :about_start, :about_end)",
                    vars(entry),
                )
                entry_id = int(cursor.lastrowid or 0)
                terms = index_terms(searchable_text(entry.speaker, entry.text))
                extra = index_terms(entry.extra)
                conn.execute(
                    "INSERT INTO search_fts (rowid, scope_tag, words, grams, keywords)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (entry_id, scope_tag(entry.scope), terms.words, terms.grams,
                     f"{extra.words} {extra.grams}".strip()),
                )  # fmt: skip
                ids.append(entry_id)
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
                "INSERT OR REPLACE INTO search_sources (kind, source, scope, mtime_ns, size,"
                " digest) VALUES (:kind, :source, :scope, :mtime_ns, :size, :digest)",
                vars(record),
            )

    def remove_source(self, kind: str, source: str) -> int:
        """Drop every entry of a file or session (and its record); returns how many."""
        with self._db.atomic() as conn:
            conn.execute("DELETE FROM search_sources WHERE kind = ? AND source = ?", (kind, source))
            return self._delete_where(conn, "kind = ? AND source = ?", (kind, source))

    def remove_memory(self, memory_id: int) -> bool:
        with self._db.atomic() as conn:
            conn.execute("DELETE FROM search_queue WHERE memory_id = ?", (memory_id,))
            removed = self._delete_where(
                conn, "kind = 'memory' AND source = '' AND locator = ?", (memory_id,)
            )
        return removed > 0

    def entries_matching(self, match: Callable[[str], bool]) -> list[int]:
        """Entries whose text (or the context embedded with it) `match`es."""
        rows = self._db.conn.execute("SELECT id, text, context FROM search_entries")
        return [int(r[0]) for r in rows if match(r[1] or "") or match(r[2] or "")]

    def remove_entries(self, entry_ids: Sequence[int]) -> int:
        """Drop these entries (text, words and vectors) and merge the word index, so no
        trace of their text is left in its segments."""
        with self._db.atomic() as conn:
            removed = 0
            for start in range(0, len(entry_ids), 500):
                chunk = list(entry_ids[start : start + 500])
                removed += self._delete_where(
                    conn, f"id IN ({','.join('?' * len(chunk))})", tuple(chunk)
                )
            conn.execute("INSERT INTO search_fts (search_fts) VALUES ('optimize')")
        return removed

    def hide(self, kind: str, source: str, marks: Iterable[str]) -> None:
        with self._db.atomic() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO search_hidden (kind, source, mark) VALUES (?, ?, ?)",
                [(kind, source, mark) for mark in marks],
            )

    def hidden(self, kind: str) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        rows = self._db.conn.execute(
            "SELECT source, mark FROM search_hidden WHERE kind = ?", (kind,)
        )
        for source, mark in rows:
            found.setdefault(source, set()).add(mark)
        return {source: frozenset(marks) for source, marks in found.items()}

    def clear(self, *, requeue_memories: bool = False) -> None:
        """Empty the index (vectors included); optionally queue every active memory again,
        so `sources.catch_up_memories` re-indexes them."""
        with self._db.atomic() as conn:
            for table in ("search_vectors", "search_entries", "search_sources", "search_queue"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM search_fts")
            conn.execute("INSERT INTO search_fts (search_fts) VALUES ('optimize')")
            if requeue_memories:
                conn.execute(
                    "INSERT INTO search_queue (memory_id)"
                    " SELECT id FROM memories WHERE status = 'active'"
                )
            self._bump(conn)

    def _delete_where(self, conn: sqlite3.Connection, where: str, args: tuple[object, ...]) -> int:
        ids = [
            int(r[0]) for r in conn.execute(f"SELECT id FROM search_entries WHERE {where}", args)
        ]
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        conn.execute(f"DELETE FROM search_fts WHERE rowid IN ({marks})", ids)
        conn.execute(f"DELETE FROM search_entries WHERE id IN ({marks})", ids)  # vectors cascade
        self._bump(conn)
        return len(ids)

    @staticmethod
    def _bump(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE search_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
        )

    # -- memory queue and source records ----------------------------------------------------

    def queued_memories(self, limit: int = 500) -> list[tuple[int, str | None]]:
        """Memory ids written since the last catch-up, with their scope (None: gone)."""
        rows = self._db.conn.execute(
            "SELECT q.memory_id, m.scope FROM search_queue q"
            " LEFT JOIN memories m ON m.id = q.memory_id ORDER BY q.memory_id LIMIT ?",
            (limit,),
        )
        return [(int(r[0]), r[1]) for r in rows]

    def has_queued_memories(self) -> bool:
        return self._db.conn.execute("SELECT 1 FROM search_queue LIMIT 1").fetchone() is not None

    def dequeue_memories(self, memory_ids: Sequence[int]) -> None:
        with self._db.atomic() as conn:
            conn.executemany(
                "DELETE FROM search_queue WHERE memory_id = ?", [(i,) for i in memory_ids]
            )

    def source_records(self, kind: str) -> dict[str, SourceRecord]:
        rows = self._db.conn.execute(
            "SELECT kind, source, scope, mtime_ns, size, digest FROM search_sources WHERE kind = ?",
            (kind,),
        )
        return {r[1]: SourceRecord(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def source_record(self, kind: str, source: str) -> SourceRecord | None:
        row = self._db.conn.execute(
            "SELECT kind, source, scope, mtime_ns, size, digest FROM search_sources"
            " WHERE kind = ? AND source = ?",
            (kind, source),
        ).fetchone()
        return None if row is None else SourceRecord(*row)

    # -- vectors ----------------------------------------------------------------------------

    def pending_vectors(self, *, since: float | None = None, kinds: Sequence[str] = KINDS) -> int:
        if since is None and set(kinds) >= set(KINDS):
            row = self._db.conn.execute("SELECT count(*) FROM search_entries WHERE embedded = 0")
            return int(row.fetchone()[0])
        marks = ", ".join("?" * len(kinds))
        row = self._db.conn.execute(
            "SELECT count(*) FROM search_entries WHERE embedded = 0 AND at >= ?"
            f" AND kind IN ({marks})",
            (float("-inf") if since is None else since, *kinds),
        )
        return int(row.fetchone()[0])

    def embed_pending(
        self,
        *,
        batch: int = 32,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
        since: float | None = None,
    ) -> int:
        """Embed entries that have no vector yet (only those dated `since` or later), in
        batches; returns how many were done."""
        done = 0
        with self._embed_lock:  # two workers would embed the same rows twice
            self.check_model()
            while limit is None or done < limit:
                size = batch if limit is None else min(batch, limit - done)
                rows = self._db.conn.execute(
                    "SELECT id, speaker, text, context FROM search_entries"
                    " WHERE embedded = 0 AND at >= ? ORDER BY id LIMIT ?",
                    (float("-inf") if since is None else since, size),
                ).fetchall()
                if not rows:
                    break
                passages = [_passage(r[1], r[2], r[3]) for r in rows]
                vectors = self.embedder.embed_passages(passages)
                self.store_vectors([int(r[0]) for r in rows], vectors)
                done += len(rows)
                if progress is not None:
                    progress(len(rows))
        return done

    def store_vectors(self, ids: Sequence[int], vectors: Vectors) -> None:
        """Save vectors for entries (gone entries are skipped). Used by `embed_pending`."""
        if not ids:
            return
        scales, quantised = quantise(vectors)
        with self._db.atomic() as conn:
            (newest,) = conn.execute("SELECT max(entry_id) FROM search_vectors").fetchone()
            rows = [
                (entry_id, float(scale), row.tobytes(), entry_id)
                for entry_id, scale, row in zip(ids, scales, quantised, strict=True)
            ]
            conn.executemany(
                "INSERT OR REPLACE INTO search_vectors (entry_id, scale, vector)"
                " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM search_entries WHERE id = ?)",
                rows,
            )
            conn.executemany(
                "UPDATE search_entries SET embedded = 1 WHERE id = ?", [(i,) for i in ids]
            )
            if newest is not None and min(ids) < newest:
                self._bump(conn)  # a cache's id watermark would miss these rows

    def check_model(self) -> None:
        """Vectors of another model are useless: drop them all when the model changes."""
        name = self.embedder.name
        row = self._db.conn.execute("SELECT value FROM search_state WHERE key = 'embedder'")
        stored = row.fetchone()
        if stored is not None and stored[0] == name:
            return
        with self._db.atomic() as conn:
            if stored is not None:
                conn.execute("DELETE FROM search_vectors")
                conn.execute("UPDATE search_entries SET embedded = 0")
                self._bump(conn)
            conn.execute(
                "INSERT OR REPLACE INTO search_state (key, value) VALUES ('embedder', ?)", (name,)
            )

    # -- queries ----------------------------------------------------------------------------

    def text_search(
        self, scopes: Sequence[str], query: str, *, limit: int, now: float
    ) -> list[int]:
        """Entry ids in these scopes matching any term of `query`, best BM25 first.

        FTS5 ranks inside its own query and hands back only the best rows (ORDER BY rank
        LIMIT in the MATCH subquery); the join then reads just those. The scope is a term
        of the MATCH when these scopes are a small part of the index; when they are most
        of it, that term would only cost a walk through its whole posting list (every
        entry of the scope, at every query), so the best rows of the whole index are
        taken instead, scoped by the join, asking again for more when too few were theirs.
        Both give the same ranking: the scope term has weight 0 in the BM25 weights.

        Words found in more than `_COMMON_ROWS` rows only score the rows the query's rarer
        words find, when the best of those already outscore anything the common words
        could add up to (`lore.backends.local.bm25`); otherwise every matching row is
        ranked. The ranking is the same either way; the first costs a fraction."""
        expression = match_expression(query)
        if expression is None or not scopes or limit <= 0:
            return []
        share = self._scope_share(scopes)
        scoped = ""
        if share < _TAG_SHARE:
            tags = " OR ".join(f'"{scope_tag(s)}"' for s in scopes)
            scoped = f"scope_tag: ({tags}) AND "
        fetch = limit + 8 if share < _TAG_SHARE else int(limit / max(share, 0.05)) + 16
        parts = bm25.units(expression)
        common = self._common(parts)
        if len(common) == len(parts) > 1:  # every unit common: the rarest finds the rows
            del common[min(common, key=common.__getitem__)]
        if common and len(common) < len(parts):
            found = self._pruned(parts, common, scoped, scopes, limit, fetch, now)
            if found is not None:
                return found
        ranked = self._ranked(f"{scoped}({expression})", None, scopes, limit, fetch, now)
        return [entry_id for entry_id, _ in ranked[:limit]]

    def _pruned(
        self,
        parts: list[str],
        counts: dict[str, int],
        scoped: str,
        scopes: Sequence[str],
        limit: int,
        fetch: int,
        now: float,
    ) -> list[int] | None:
        """The best `limit` rows ranking only rows that hold a unit outside the common ones
        (`counts`: the rows holding each), or None when rows holding only common units
        might be among them."""
        # Entry ids are the FTS rowids: the largest is at least the table's row count.
        (newest,) = self._db.conn.execute(
            "SELECT coalesce(max(id), 0) FROM search_entries"
        ).fetchone()
        rows = max(int(newest), 1)
        bounds = {u: bm25.term_bound(rows, count) for u, count in counts.items()}
        common = list(counts)
        for _ in range(2):
            rare = " OR ".join(u for u in parts if u not in common)
            both = f"{scoped}({rare}) AND ({' OR '.join(common)})"
            ranked = self._ranked(both, f"{scoped}({rare})", scopes, limit, fetch, now)
            worst = -ranked[limit - 1][1] if len(ranked) >= limit else 0.0
            if bm25.below(sum(bounds[u] for u in common), worst):
                return [entry_id for entry_id, _ in ranked[:limit]]
            # The limit-th score only grows as rare units join: the commonest units whose
            # bounds stay below it now will stay below it then.
            common = bm25.droppable(common, bounds, worst)
            if not common:
                return None
        return None

    def _ranked(
        self,
        expression: str,
        rare: str | None,
        scopes: Sequence[str],
        limit: int,
        fetch: int,
        now: float,
    ) -> list[tuple[int, float]]:
        """(id, rank) of the best rows of these scopes matching `expression`, best first,
        at least `limit` of them when there are. With `rare`, the rows matching `rare`
        join them at their own rank (a row matching both keeps the better, full one)."""
        marks = ",".join("?" * len(scopes))
        best = "SELECT rowid, rank FROM search_fts WHERE search_fts MATCH ? AND rank MATCH ?"
        if rare is None:
            inner = f"{best} ORDER BY rank LIMIT ?"
        else:
            inner = (
                f"SELECT rowid, min(rank) AS rank FROM (SELECT * FROM ({best} ORDER BY rank"
                f" LIMIT ?) UNION ALL SELECT * FROM ({best} ORDER BY rank LIMIT ?))"
                " GROUP BY rowid ORDER BY rank, rowid LIMIT ?"
            )
        while True:
            if rare is None:
                params: tuple[object, ...] = (expression, _RANK, fetch)
            else:
                params = (expression, _RANK, fetch, rare, _RANK, fetch, fetch)
            rows = self._db.conn.execute(
                "SELECT f.rowid, f.rank,"
                " e.id IS NOT NULL AND (e.expires_at IS NULL OR e.expires_at > ?)"
                f" FROM ({inner}) f"
                f" LEFT JOIN search_entries e ON e.id = f.rowid AND e.scope IN ({marks})"
                " ORDER BY f.rank, f.rowid",
                (now, *params, *scopes),
            ).fetchall()
            found = [(int(r[0]), float(r[1])) for r in rows if r[2]]
            if len(found) >= limit or len(rows) < fetch:
                return found
            fetch *= 4

    def _common(self, parts: Sequence[str]) -> dict[str, int]:
        """The one-phrase units found in more than `_COMMON_ROWS` rows, with how many.
        Counts are kept per process until something is removed: a count that has since
        grown only makes a unit's bound larger than it is (see `_pruned`)."""
        generation = self._generation_now()
        if generation != self._frequencies_at or len(self._frequencies) > 10_000:
            self._frequencies = {}
            self._frequencies_at = generation
        known = self._frequencies
        common = {}
        for unit in parts:
            if not bm25.is_one_phrase(unit):
                continue
            count = known.get(unit)
            if count is None:
                (count,) = self._db.conn.execute(
                    "SELECT count(*) FROM search_fts WHERE search_fts MATCH ?", (unit,)
                ).fetchone()
                known[unit] = count = int(count)
            if count > _COMMON_ROWS:
                common[unit] = count
        return common

    def _generation_now(self) -> int:
        row = self._db.conn.execute("SELECT value FROM search_state WHERE key = 'generation'")
        return int(row.fetchone()[0])

    def _scope_share(self, scopes: Sequence[str]) -> float:
        """About what part of the index these scopes hold (counted once per process, again
        when the index has grown by a quarter): it only chooses how to query."""
        conn = self._db.conn
        (newest,) = conn.execute("SELECT coalesce(max(id), 0) FROM search_entries").fetchone()
        if self._sizes_at < 0 or newest > self._sizes_at * 1.25 + 100:
            self._sizes.clear()
            (self._total,) = conn.execute("SELECT count(*) FROM search_entries").fetchone()
            self._sizes_at = int(newest)
        for scope in scopes:
            if scope not in self._sizes:
                (self._sizes[scope],) = conn.execute(
                    "SELECT count(*) FROM search_entries WHERE scope = ?", (scope,)
                ).fetchone()
        return sum(self._sizes[s] for s in set(scopes)) / max(self._total, 1)

    def vector_search(
        self, scopes: Sequence[str], query: Vectors, *, limit: int, now: float
    ) -> list[tuple[int, float]]:
        """Entry ids in these scopes nearest to `query` (cosine), best first."""
        found_ids: list[NDArray[np.int64]] = []
        found_scores: list[NDArray[np.float32]] = []
        with self._lock:
            self._sync_caches()
            for scope in dict.fromkeys(scopes):
                ids, scores = self._cache(scope).top(query, limit, now)
                found_ids.append(ids)
                found_scores.append(scores)
        if not found_ids:
            return []
        ids = np.concatenate(found_ids)
        scores = np.concatenate(found_scores)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(int(ids[i]), float(scores[i])) for i in order]

    def vectors_of(self, scope: str, ids: Sequence[int]) -> dict[int, Vectors]:
        """Cached vectors of some entries of a scope (those already embedded)."""
        with self._lock:
            return self._cache(scope).rows(ids)

    def facts_of(self, scope: str, session_id: str) -> dict[int, list[str]]:
        """The active memories extracted from a session's messages, by message index (the
        memory's source link): they join that message's search key."""
        rows = self._db.conn.execute(
            "SELECT source_message, content FROM memories WHERE scope = ? AND"
            " source_session = ? AND source_message IS NOT NULL AND status = 'active'"
            " ORDER BY id",
            (scope, session_id),
        )
        facts: dict[int, list[str]] = {}
        for message, content in rows:
            facts.setdefault(int(message), []).append(str(content))
        return facts

    def superseded_in(self, scope: str, session_id: str) -> dict[int, int]:
        rows = self._db.conn.execute(
            "SELECT id, source_session, source_message, superseded_by, status FROM memories"
            " WHERE scope = ? AND status IN ('active', 'superseded')",
            (scope,),
        )
        return current_versions(
            [(int(r[0]), r[1], r[2], r[3], str(r[4])) for r in rows], session_id
        )

    def fetch(self, ids: Sequence[int]) -> dict[int, Stored]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._db.conn.execute(
            "SELECT id, scope, kind, source, locator, at, speaker, text, about_start, about_end"
            " FROM search_entries"
            f" WHERE id IN ({marks})",
            list(ids),
        )
        return {int(r[0]): Stored(*r) for r in rows}

    def stats(self) -> IndexStats:
        conn = self._db.conn
        kinds = dict.fromkeys(KINDS, 0)
        sources = dict.fromkeys(KINDS, 0)
        for kind, count, distinct in conn.execute(
            # `||` binds tighter than `*` in SQLite: the product needs its own parentheses.
            "SELECT kind, count(*), count(DISTINCT source || '/' || ((kind = 'memory') * locator))"
            " FROM search_entries GROUP BY kind"
        ):
            kinds[kind], sources[kind] = int(count), int(distinct)
        (scopes,) = conn.execute("SELECT count(DISTINCT scope) FROM search_entries").fetchone()
        (vectors,) = conn.execute("SELECT count(*) FROM search_vectors").fetchone()
        (queued,) = conn.execute("SELECT count(*) FROM search_queue").fetchone()
        row = conn.execute("SELECT value FROM search_state WHERE key = 'embedder'").fetchone()
        return IndexStats(
            kinds,
            sources,
            int(scopes),
            int(vectors),
            self.pending_vectors(),
            int(queued),
            row[0] if row else "",
        )

    # -- the vector cache -------------------------------------------------------------------

    def _sync_caches(self) -> None:
        """Drop every cached matrix when something was removed since it was loaded."""
        generation = self._generation_now()
        if generation != self._generation:
            self._caches.clear()
            self._generation = generation

    def _cache(self, scope: str) -> VectorMatrix:
        cache = self._caches.get(scope)
        if cache is None:
            cache = self._caches[scope] = VectorMatrix()
            self._scope_share([scope])
            cache.reserve(self._sizes[scope], self.embedder.dim)
        cursor = self._db.conn.execute(
            "SELECT v.entry_id, v.scale, v.vector, e.expires_at FROM search_entries e"
            " JOIN search_vectors v ON v.entry_id = e.id WHERE e.scope = ? AND e.id > ?"
            " ORDER BY e.id",
            (scope, cache.watermark),
        )
        # A few thousand rows at a time: a whole scope as Python tuples would weigh more
        # than the matrix itself.
        while rows := cursor.fetchmany(_LOAD_ROWS):
            cache.append(rows)
        return cache


def _passage(speaker: str, text: str, context: str) -> str:
    body = searchable_text(speaker, text)
    return f"{context}\n{body}" if context else body
