"""A query as a PostgreSQL tsquery: the same units `lore.text.match_expression` builds
for SQLite's FTS5, so both backends match the same entries.

Weights stand for FTS5's columns: A words, B CJK grams, C keywords and other extra text
(see migration m001). Lexemes pass through the `lore_terms` configuration, which stems
English words as the index did.
"""

from __future__ import annotations

# The query tokenisation must stay exactly the one the index and the SQLite backend use.
from lore.text import _MAX_UNITS, _RUN, _STOPWORDS, _WORD_RUN, _word_term, normalise

__all__ = ["ts_query", "ts_terms"]


def ts_query(query: str) -> str | None:
    """`to_tsquery` text matching any word of `query`, or None when it has none."""
    units, _ = _units(query)
    return " | ".join(units) if units else None


def ts_terms(query: str) -> list[str]:
    """Each term of `query` as its own one-lexeme `to_tsquery` text, in the order of
    `ts_query`'s units: what BM25 weighs one by one (a CJK run's bigrams and the run as
    a word are separate terms, as they are separate phrases to FTS5's bm25)."""
    _, terms = _units(query)
    return terms


def _units(query: str) -> tuple[list[str], list[str]]:
    units: list[str] = []
    terms: list[str] = []
    latin: list[str] = []
    for match in _RUN.finditer(normalise(query)):
        run = match.group("cjk")
        if run is None:
            latin.append(_word_term(match.group("word")))
        elif len(run) == 1:
            units.append(_lexeme(run, "BC"))
            terms.append(units[-1])
        elif len(run) <= _WORD_RUN:
            grams = [_lexeme(run[i : i + 2], "BC") for i in range(len(run) - 1)]
            units.append(f"(({' & '.join(grams)}) | {_lexeme(run, 'A')})")
            terms += [*grams, _lexeme(run, "A")]
        else:
            units.extend(_lexeme(run[i : i + 2], "BC") for i in range(len(run) - 1))
            terms += units[-(len(run) - 1) :]
    content = [w for w in latin if w not in _STOPWORDS] or latin
    units.extend(_lexeme(w, "AC") for w in content)
    terms.extend(_lexeme(w, "AC") for w in content)
    units = list(dict.fromkeys(units))[:_MAX_UNITS]
    return units, list(dict.fromkeys(terms))[:_MAX_UNITS]


def _lexeme(term: str, weights: str) -> str:
    quoted = term.replace("\\", "\\\\").replace("'", "''")
    return f"'{quoted}':{weights}"
