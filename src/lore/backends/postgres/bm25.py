"""BM25 over the search index's tsvectors, so PostgreSQL ranks text as SQLite's FTS5 does.

`ts_rank` alone weighs every word the same: "the" found counts as much as "Hualien"
found. BM25 weighs each query term by its inverse document frequency, saturates repeats
and favours short entries. Here it is computed in one statement over the entries that
match the query (the same set `ts_rank` ranked before):

- a term's frequency in an entry is `ts_rank` of that one term, scaled so one occurrence
  in the text is 1.0 (weights as FTS5's columns: words and CJK grams 1.0, extra text 0.375;
  repeats count less and less, which BM25's own saturation then bounds);
- its document frequency is how many of the matching entries hold it (every entry that
  holds a term matches the query, which ORs its terms);
- the number of entries and their mean length (distinct lexemes) in the searched scopes
  come from `ScopeStatistics`: a small scope is counted at every search (a new
  conversation changes fast), a large one once per process and again when the index
  has grown by a quarter (it moves slowly, and these figures only shade the ranking).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ScopeStatistics", "bm25_arguments", "bm25_search"]

K1 = 1.2  # FTS5's bm25 constants
B = 0.75
_WEIGHTS = "'{0, 0.375, 1.0, 1.0}'"  # {D, C, B, A}: C extra text, B CJK grams, A words
_ONE = 1.64493406685  # ts_rank of one occurrence is weight / (pi^2 / 6)
# Below this IDF a term counts as (almost) nothing, as in FTS5 (a term in most entries).
_MIN_IDF = 1e-6
_SMALL = 2_000  # entries: a scope this small is cheaper to count than to track


def bm25_search(terms: Sequence[str], live: str) -> str:
    """The statement ranking entries of %(scopes)s matching %(query)s (a `to_tsquery`
    text) by BM25 over `terms` (one-lexeme `to_tsquery` texts, passed as %(t0)s, %(t1)s,
    ...); `live` is the extra condition on the entries. Takes %(entries)s and
    %(mean_length)s from `ScopeStatistics` and %(limit)s; returns ids, best first."""
    # Each term's tsquery is parsed once, in FROM: in the select list a prepared
    # statement would parse it again for every row.
    n = len(terms)
    parsed = "".join(f", to_tsquery('lore_terms', %(t{i})s) q{i}" for i in range(n))
    frequencies = ", ".join(f"ts_rank({_WEIGHTS}, terms, q{i}) * {_ONE} AS f{i}" for i in range(n))
    counts = ", ".join(f"count(*) FILTER (WHERE f{i} > 0)::float8 AS d{i}" for i in range(n))
    # IDF as FTS5's: ln((N - n + 0.5) / (n + 0.5)), floored; N never below n (a count
    # cached before the scope grew), or the logarithm would have nothing to take.
    score = " + ".join(
        f"greatest(ln((greatest(%(entries)s::float8, d{i}) - d{i} + 0.5) / (d{i} + 0.5)),"
        f" {_MIN_IDF}) * f{i} * {K1 + 1}"
        f" / (f{i} + {K1} * (1 - {B} + {B} * len / %(mean_length)s))"
        for i in range(n)
    )
    # Both CTEs materialized: the planner, which cannot count the hits in advance, would
    # otherwise count the document frequencies again for every hit.
    return (
        f"WITH hits AS MATERIALIZED (SELECT id, length(terms)::float8 AS len, {frequencies}"
        f" FROM search_entries, to_tsquery('lore_terms', %(query)s) query{parsed}"
        f" WHERE scope = ANY(%(scopes)s) AND terms @@ query AND {live}),"
        f" frequency AS MATERIALIZED (SELECT {counts} FROM hits)"
        f" SELECT id FROM hits, frequency ORDER BY {score} DESC, id LIMIT %(limit)s"
    )


def bm25_arguments(terms: Sequence[str]) -> dict[str, Any]:
    return {f"t{i}": term for i, term in enumerate(terms)}


class ScopeStatistics:
    """Entries per scope and their total length: small scopes counted at each call, large
    ones cached per process and counted again once the index has grown by a quarter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counted: dict[str, tuple[int, float]] = {}
        self._at = -1

    def of(
        self,
        scopes: Sequence[str],
        newest: int,
        count: Callable[[str], tuple[int, float]],
    ) -> tuple[int, float]:
        """(entries, mean length) over `scopes`, given the index's newest id and how to
        count one scope (entries, total length)."""
        with self._lock:
            if self._at < 0 or newest > self._at * 1.25 + 100:
                self._counted.clear()
                self._at = newest
            for scope in dict.fromkeys(scopes):
                known = self._counted.get(scope)
                if known is None or known[0] < _SMALL:
                    self._counted[scope] = count(scope)
            entries = sum(self._counted[s][0] for s in set(scopes))
            length = sum(self._counted[s][1] for s in set(scopes))
        return entries, (length / entries if entries else 1.0)
