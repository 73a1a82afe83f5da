"""BM25 over tsvectors, computed as SQLite's FTS5 computes it, so both backends rank text
the same way (the search index and the memory store alike).

FTS5's `bm25()` sums, over the query's phrases, idf × f·(k1 + 1) / (f + k1·(1 − b +
b·|D| / avgdl)). Each part here is FTS5's own:

- f, a term's frequency in a row, is its occurrences weighted by column: in PostgreSQL,
  `ts_rank_cd` of that one term, which adds the weight of each occurrence (of the
  weights the query term allows, as an FTS5 column filter does), times the largest
  weight (`ts_rank_cd` takes weights up to 1);
- |D| is the row's length in tokens, every column counted with its repeats (the
  `tokens` column, m008), plus the scope tag FTS5 keeps in each row;
- idf is ln((N − n + 0.5) / (n + 0.5)), at least 1e-6, with N the rows of the whole
  table and n the rows holding the term, and avgdl the whole table's mean length: as in
  FTS5, every conversation counts, not only the searched one (a word common elsewhere
  weighs less here too). Ranking with one conversation's own figures instead cost
  LoCoMo recall a point beside SQLite.

These figures come from `TableStatistics`: a small table is counted again after each
write, a large one once per process and again when it has grown by a quarter (it moves
slowly, and they only shade the ranking).

`Bm25Ranking` ranks a table's rows this way, leaving common terms out of the rows it
ranks when that cannot change the result, as the SQLite index does
(`lore.backends.local.bm25`): each term adds less than (k1 + 1) × idf to a row's score,
so a row holding none of the query's rarer terms scores at most the sum of its common
terms' bounds. When the `limit`-th best of the rows holding a rarer term scores above
that sum, those rows, ranked in full, are the answer. Otherwise that score is a floor
the answer's `limit`-th can only rise above: the rows holding a rarer term or a set of
common terms whose bounds reach it (`reaching`) are ranked, and no other row can be
among the best. When those sets are too many to spell out, every matching row is.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lore.backends.local.bm25 import below, droppable
from lore.backends.postgres.database import Connection
from lore.backends.postgres.tsquery import ts_query, ts_terms

__all__ = [
    "COMMON_ROWS",
    "Bm25Ranking",
    "ColumnWeights",
    "TableStatistics",
    "bm25_arguments",
    "bm25_search",
    "reaching",
]

K1 = 1.2  # FTS5's bm25 constants
B = 0.75
# Below this IDF a term counts as (almost) nothing, as in FTS5 (a term in most rows).
_MIN_IDF = 1e-6
_SMALL = 10_000  # rows: a table this small is cheaper to count than to track
_KEPT_TERMS = 10_000  # term counts kept per process before they are counted afresh
# A term held by more rows than this may be left to score only what rarer terms find.
COMMON_ROWS = 1000


@dataclass(frozen=True)
class ColumnWeights:
    """FTS5's bm25 column weights, by tsvector weight: A words, B CJK grams, C extra
    text (keywords, a message's date and neighbouring turns)."""

    words: float
    grams: float
    extra: float

    def frequency(self, term: int) -> str:
        """SQL for the weighted occurrences of term `q{term}` in `terms`."""
        top = max(self.words, self.grams, self.extra)
        scaled = ", ".join(f"{w / top:.6g}" for w in (0.0, self.extra, self.grams, self.words))
        return f"ts_rank_cd('{{{scaled}}}', terms, q{term}) * {top:.6g}"


def bm25_search(
    terms: Sequence[str],
    *,
    table: str,
    where: str,
    weights: ColumnWeights,
    then: str = "id",
    columns: str = "",
) -> str:
    """The statement ranking rows of `table` meeting `where` and matching %(query)s (a
    `to_tsquery` text) by BM25 over `terms` (one-lexeme `to_tsquery` texts). Takes the
    arguments of `bm25_arguments` and %(limit)s; returns ids and scores, best first, equal
    scores ordered by `then` (over id and `columns`, a list starting with a comma)."""
    # Each term's tsquery is parsed once, in FROM: in the select list a prepared
    # statement would parse it again for every row.
    n = len(terms)
    parsed = "".join(f", to_tsquery('lore_terms', %(t{i})s) q{i}" for i in range(n))
    frequencies = ", ".join(f"{weights.frequency(i)} AS f{i}" for i in range(n))
    score = " + ".join(
        f"%(idf{i})s * f{i} * {K1 + 1} / (f{i} + {K1} * (1 - {B} + {B} * len / %(mean_length)s))"
        for i in range(n)
    )
    # Materialized, so each frequency is computed once a row, not once per use.
    return (
        f"WITH hits AS MATERIALIZED (SELECT id{columns}, tokens + 1.0 AS len, {frequencies}"
        f" FROM {table}, to_tsquery('lore_terms', %(query)s) query{parsed}"
        f" WHERE terms @@ query AND {where})"
        f" SELECT id, {score} AS score FROM hits ORDER BY score DESC, {then} LIMIT %(limit)s"
    )


def bm25_arguments(
    terms: Sequence[str], rows: int, mean_length: float, holding: Sequence[int]
) -> dict[str, Any]:
    """The statement's arguments: each term, its idf (from the table's `rows` and the
    rows `holding` it) and the mean length."""
    arguments: dict[str, Any] = {"mean_length": mean_length}
    for i, (term, n) in enumerate(zip(terms, holding, strict=True)):
        # N never below n (a count cached before the table grew): the logarithm needs it.
        total = max(rows, n)
        arguments[f"t{i}"] = term
        arguments[f"idf{i}"] = max(math.log((total - n + 0.5) / (n + 0.5)), _MIN_IDF)
    return arguments


class TableStatistics:
    """A table's rows, their mean length in tokens (the scope tag included) and the rows
    holding each term, kept per process: while the table is small, until a row is added;
    once it is large, until it has grown by a quarter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._size: tuple[int, float] | None = None
        self._holding: dict[str, int] = {}
        self._at = -1

    def of(
        self,
        terms: Sequence[str],
        newest: int,
        size: Callable[[], tuple[int, float]],
        holding: Callable[[str], int],
    ) -> tuple[int, float, list[int]]:
        """(rows, mean length, rows holding each term), given the table's newest id and
        how to count its size (rows, total length) and the rows holding one term."""
        with self._lock:
            small = self._size is None or self._size[0] < _SMALL
            changed = newest != self._at if small else newest > self._at * 1.25 + 100
            if self._at < 0 or changed or len(self._holding) > _KEPT_TERMS:
                self._size = size()
                self._holding.clear()
                self._at = newest
            counts = []
            for term in terms:
                if term not in self._holding:
                    self._holding[term] = holding(term)
                counts.append(self._holding[term])
            rows, length = self._size or (0, 0.0)
        return rows, (length / rows if rows else 1.0), counts


class Bm25Ranking:
    """How one table's rows are ranked for a query: BM25 with the whole table's figures
    (kept in a `TableStatistics`), common terms pruned where that changes nothing.

    `size` and `holding` count, on a connection, the table's rows and their total length
    and the rows holding one term; `then` and `columns` are `bm25_search`'s. A term held
    by more than `common_rows` rows may be pruned (None: never). `pruned` counts the
    searches answered without ranking every matching row (for benchmarks and tests)."""

    def __init__(
        self,
        table: str,
        weights: ColumnWeights,
        *,
        size: Callable[[Connection], tuple[int, float]],
        holding: Callable[[Connection, str], int],
        then: str = "id",
        columns: str = "",
        common_rows: int | None = COMMON_ROWS,
    ) -> None:
        self._table = table
        self._weights = weights
        self._size = size
        self._holding = holding
        self._then = then
        self._columns = columns
        self._common_rows = common_rows
        self._statistics = TableStatistics()
        self.pruned = 0

    def best(
        self, conn: Connection, query: str, *, where: str, arguments: Mapping[str, Any], limit: int
    ) -> list[int]:
        """Ids of the best `limit` rows meeting `where` (SQL over `arguments`) that match
        any word of `query`, best first."""
        expression = ts_query(query)
        if expression is None:
            return []
        terms = ts_terms(query)
        row = conn.execute(f"SELECT coalesce(max(id), 0) AS id FROM {self._table}").fetchone()
        rows, mean_length, holding = self._statistics.of(
            terms,
            0 if row is None else int(row["id"]),
            lambda: self._size(conn),
            lambda term: self._holding(conn, term),
        )
        values = {**arguments, "limit": limit, **bm25_arguments(terms, rows, mean_length, holding)}
        statement = bm25_search(
            terms,
            table=self._table,
            where=where,
            weights=self._weights,
            then=self._then,
            columns=self._columns,
        )
        common = self._common(terms, holding)
        if common:
            # Each term adds less than (k1 + 1) × idf, whatever the row (see the module).
            bounds = {t: (K1 + 1) * values[f"idf{terms.index(t)}"] for t in common}
            found = _pruned(conn, statement, expression, terms, bounds, values, limit)
            if found is not None:
                self.pruned += 1
                return found
        ranked = conn.execute(statement, {**values, "query": expression}).fetchall()
        return [int(r["id"]) for r in ranked]

    def _common(self, terms: Sequence[str], holding: Sequence[int]) -> list[str]:
        """The terms held by more than `common_rows` rows, when some term is not: the
        rarer ones find the rows. When every term is common, all but the rarest."""
        if self._common_rows is None or len(terms) < 2:
            return []
        counts = dict(zip(terms, holding, strict=True))
        common = [t for t in terms if counts[t] > self._common_rows]
        if len(common) == len(terms):
            common.remove(min(common, key=counts.__getitem__))
        return common


def _pruned(
    conn: Connection,
    statement: str,
    expression: str,
    terms: Sequence[str],
    bounds: Mapping[str, float],
    values: Mapping[str, Any],
    limit: int,
) -> list[int] | None:
    """The best `limit` rows, ranking first only the rows that hold a term outside the
    common ones (`bounds`: what each can add), then, if a row holding only common terms
    might still be among them, the rows holding enough of them to get there; or None
    when every matching row has to be ranked."""
    rare = [t for t in terms if t not in bounds]
    ranked = _ranked(conn, statement, expression, rare, values)
    worst = float(ranked[limit - 1]["score"]) if len(ranked) >= limit else 0.0
    if below(sum(bounds.values()), worst):
        return [int(r["id"]) for r in ranked]
    if not worst:
        return None
    # The limit-th score only grows as rows join: a row holding common terms whose
    # bounds stay below it now cannot reach the best `limit`.
    groups = reaching(bounds, worst)
    if groups is None:  # too many to spell out: leave out the commonest alone
        common = droppable(list(bounds), bounds, worst)
        if not common:
            return None
        ranked = _ranked(conn, statement, expression, [t for t in terms if t not in common], values)
        worst = float(ranked[limit - 1]["score"])
        return (
            [int(r["id"]) for r in ranked] if below(sum(bounds[t] for t in common), worst) else None
        )
    together = [f"({' & '.join(group)})" if len(group) > 1 else group[0] for group in groups]
    return [int(r["id"]) for r in _ranked(conn, statement, expression, rare + together, values)]


def _ranked(
    conn: Connection,
    statement: str,
    expression: str,
    parts: Sequence[str],
    values: Mapping[str, Any],
) -> list[Any]:
    """The statement's rows over the rows matching the query and one of `parts`."""
    # The query's own expression too: a row holding one gram of a Chinese word matches
    # that term but not the word.
    query = f"({expression}) & ({' | '.join(parts)})"
    return conn.execute(statement, {**values, "query": query}).fetchall()


def reaching(bounds: Mapping[str, float], score: float, most: int = 32) -> list[list[str]] | None:
    """The smallest sets of terms whose bounds together are not below `score` (a row
    holding no whole set scores below it), or None when there are more than `most`."""
    ordered = sorted(bounds, key=bounds.__getitem__, reverse=True)
    left = [sum(bounds[t] for t in ordered[i:]) for i in range(len(ordered) + 1)]
    found: list[list[str]] = []

    def walk(start: int, chosen: list[str], total: float) -> bool:
        for i in range(start, len(ordered)):
            if below(total + left[i], score):
                return True  # the rest together cannot get there
            term = ordered[i]
            if not below(total + bounds[term], score):
                found.append([*chosen, term])
                if len(found) > most:
                    return False
            elif not walk(i + 1, [*chosen, term], total + bounds[term]):
                return False
        return True

    return found if walk(0, [], 0.0) else None
