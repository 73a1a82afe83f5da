"""What one term can add to an FTS5 BM25 score, so a search can leave common terms out of
the rows it ranks without changing which rows come first.

FTS5's `bm25()` sums, over the phrases of a MATCH, idf × f·(k1 + 1) / (f + k1·(1 − b +
b·|D| / avgdl)), with k1 = 1.2, b = 0.75, idf = ln((N − n + 0.5) / (n + 0.5)) (at least
1e-6), N the rows of the table and n the rows holding the phrase. The fraction is below
k1 + 1 whatever the counts and lengths, so a phrase never adds more than 2.2 × idf.

A query is split into its OR-ed units (`units`). Ranking costs FTS5 a few microseconds a
matching row, counting them a twentieth of that, so a query whose words include common
ones ("her", "says", a family name in a family's chat) spends most of its time ranking
rows that only share those words. If the best rows holding a rare unit already score
above the sum of the common units' bounds, no row holding only common units can reach
them: the common units then only score the rows the rare ones found (the classic
max-score argument), and the result is the same as ranking every row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

__all__ = ["below", "droppable", "is_one_phrase", "term_bound", "units"]

_K1 = 1.2
# One quoted phrase with its column filter: a unit BM25 scores as one phrase.
_ONE_PHRASE = re.compile(r'^(\{[\w ]+\}|\w+) ?: ?"(?:[^"]|"")*"$')


def units(expression: str) -> list[str]:
    """The top-level OR-ed parts of an FTS5 MATCH expression, in order."""
    found: list[str] = []
    depth = 0
    quoted = False
    start = 0
    at = 0
    while at < len(expression):
        char = expression[at]
        if char == '"':
            quoted = not quoted  # a doubled quote inside a phrase toggles twice
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and expression.startswith(" OR ", at):
            found.append(expression[start:at])
            at += 4
            start = at
            continue
        at += 1
    found.append(expression[start:])
    return [unit for unit in found if unit]


def is_one_phrase(unit: str) -> bool:
    return _ONE_PHRASE.match(unit) is not None


def term_bound(rows: int, holding: int) -> float:
    """The most one phrase can add to a row's BM25 score, where `rows` is at least the
    table's row count and `holding` at most the rows holding the phrase (either way the
    bound only grows)."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return (_K1 + 1.0) * max(idf, 1e-6)


def droppable(common: Sequence[str], bounds: Mapping[str, float], score: float) -> list[str]:
    """The commonest units (smallest bound first) whose bounds together stay below
    `score`: a row holding only those cannot score `score`."""
    kept: list[str] = []
    total = 0.0
    for unit in sorted(common, key=lambda u: bounds[u]):
        if not below(total + bounds[unit], score):
            break
        kept.append(unit)
        total += bounds[unit]
    return kept


def below(bound: float, score: float) -> bool:
    """`bound` is safely under `score` (a margin for the last bits of a float sum)."""
    return bound < score * (1.0 - 1e-9)
