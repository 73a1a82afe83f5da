"""Pseudo-relevance feedback: the query vector moved toward its best first results.

The mean vector of the top fused entries joins the query's own (Rocchio's rule, no
model call) and the vectors are searched again; the second list joins the fusion. It is
off by default: on LoCoMo it cost recall (the best first results are often the wrong
turns of the right session, and feedback pulls more of them in). `bench/retrieval.py
--ablate` keeps measuring it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lore.embed import Vectors
from lore.ports.search import SearchIndexPort

__all__ = ["feedback_ranking"]


def feedback_ranking(
    index: SearchIndexPort,
    scopes: Sequence[str],
    query: Vectors,
    fused: Mapping[int, float],
    *,
    top: int,
    weight: float,
    limit: int,
    now: float,
) -> list[int]:
    """Entry ids nearest to the query moved by `weight` toward the mean vector of the
    `top` best fused entries; [] when none of them has a vector."""
    best = sorted(fused, key=lambda i: (-fused[i], i))[:top]
    rows = [r for scope in dict.fromkeys(scopes) for r in index.vectors_of(scope, best).values()]
    if not rows:
        return []
    moved = query.reshape(-1) + weight * np.mean(np.stack(rows), axis=0)
    moved = (moved / max(float(np.linalg.norm(moved)), 1e-12)).astype(np.float32)
    return [entry_id for entry_id, _ in index.vector_search(scopes, moved, limit=limit, now=now)]
