"""Relevant or absent: the last step of a search drops hits that are only the nearest.

Vector search always returns its nearest entries, related or not: with four memories,
"coffee" would list all four. e5 similarities live in a narrow band that moves with the
language and the query (unrelated English passages score 0.72-0.79 against "coffee",
unrelated Chinese ones 0.82-0.86 against "咖啡"), so no fixed cosine means "relevant".
Each query is therefore measured against a few neutral anchor sentences in English,
Chinese and Russian: a hit found by meaning alone must score above the best anchor by a
margin. A hit whose words matched (BM25) is kept, and so is a neighbouring message lifted
beside a kept hit (the answer that follows a question).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lore.search.embed import Embedder, Vectors
    from lore.search.hybrid import Hit

__all__ = ["ANCHORS", "MARGIN", "anchor_floor", "keep_relevant"]

# Everyday sentences about nothing a user would search for, in the languages Lore serves.
ANCHORS = (
    "The weather was cloudy today",
    "He bought a new chair last week",
    "We talked for a while and then left",
    "今天天气有点阴",
    "他上周买了一把新椅子",
    "我们聊了一会儿就走了",
    "Сегодня было пасмурно",
    "На прошлой неделе он купил новый стул",
    "Мы немного поговорили и ушли",
)
MARGIN = 0.01

_anchors: dict[str, Vectors] = {}
_lock = threading.Lock()


def anchor_floor(embedder: Embedder, query: Vectors) -> float:
    """The similarity a hit found by meaning alone must exceed for this query."""
    with _lock:
        vectors = _anchors.get(embedder.name)
        if vectors is None:
            vectors = _anchors[embedder.name] = embedder.embed_passages(ANCHORS)
    return float(np.max(vectors @ query.reshape(-1))) + MARGIN


def keep_relevant(hits: Sequence[Hit], similarity: Mapping[int, float], floor: float) -> list[Hit]:
    """`hits` without those that matched no word and whose similarity is below `floor`;
    a hit that matched neither list (a lifted neighbour) stays only beside a kept hit."""
    kept = {
        hit.entry.id
        for hit in hits
        if hit.text_rank is not None or similarity.get(hit.entry.id, -1.0) > floor
    }
    by_id = {hit.entry.id: hit for hit in hits}

    def beside_kept(hit: Hit) -> bool:
        for near in (hit.entry.id - 1, hit.entry.id + 1):
            other = by_id.get(near)
            if near in kept and other is not None and other.entry.source == hit.entry.source:
                return True
        return False

    return [
        hit
        for hit in hits
        if hit.entry.id in kept
        or (hit.text_rank is None and hit.vector_rank is None and beside_kept(hit))
    ]
