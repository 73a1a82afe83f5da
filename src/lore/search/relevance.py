"""Relevant or absent: the last step of a search drops hits that are only the nearest.

Vector search always returns its nearest entries, related or not: with four memories,
"coffee" would list all four. e5 similarities live in a narrow band that moves with the
language and the query (unrelated English passages score 0.72-0.79 against "coffee",
unrelated Chinese ones 0.82-0.86 against "咖啡"), so no fixed cosine means "relevant".
Each query is therefore measured against a few neutral anchor sentences in English,
Chinese and Russian: a hit found by meaning alone must score above the best anchor by a
margin, except the nearest hits (within BAND of the nearest), which need only beat the
anchors: a question in one language about a memory in another scores lower than within
one language, and e5-small often ranks the right one a hair below a wrong one. A hit
whose words matched (BM25) is kept, and so is a message right beside a kept one in the
same session (the answer that follows a question). The margin was set on a handful of English,
Chinese and Russian cases (tests/test_relevance.py) and checked on LoCoMo.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lore.embed import Embedder, Vectors
    from lore.search.hybrid import Hit

__all__ = ["ANCHORS", "BAND", "MARGIN", "anchor_floor", "keep_relevant"]

# Everyday sentences about nothing a user would search for, in the languages Lore serves.
ANCHORS = (
    "The weather was cloudy today",
    "He bought a new chair last week",
    "We talked for a while and then left",
    "She likes to read in the evening",
    "今天天气有点阴",
    "他上周买了一把新椅子",
    "我们聊了一会儿就走了",
    "她晚上喜欢看书",
    "Сегодня было пасмурно",
    "На прошлой неделе он купил новый стул",
    "Мы немного поговорили и ушли",
    "Вечером она любит читать",
)
MARGIN = 0.015
BAND = 0.01

_anchors: dict[str, Vectors] = {}
_lock = threading.Lock()


def anchor_floor(embedder: Embedder, query: Vectors) -> float:
    """How similar the nearest neutral anchor sentence is to this query."""
    with _lock:
        vectors = _anchors.get(embedder.name)
        if vectors is None:
            vectors = _anchors[embedder.name] = embedder.embed_passages(ANCHORS)
    return float(np.max(vectors @ query.reshape(-1)))


def keep_relevant(hits: Sequence[Hit], similarity: Mapping[int, float], floor: float) -> list[Hit]:
    """`hits` without those that matched no word and whose similarity does not clear
    `floor` (+ MARGIN, but for the nearest within BAND); a message right beside a kept
    one in the same session stays with it (the question before an answer, the answer
    after a question)."""
    nearest = max(similarity.values(), default=0.0)

    def clears(entry_id: int) -> bool:
        score = similarity.get(entry_id)
        if score is None:
            return False
        return score > floor + (0.0 if score >= nearest - BAND else MARGIN)

    kept = {hit.entry.id for hit in hits if hit.text_rank is not None or clears(hit.entry.id)}
    by_id = {hit.entry.id: hit for hit in hits}

    def beside_kept(hit: Hit) -> bool:
        if hit.entry.kind == "memory":
            return False  # memories stand alone; only messages and note chunks run on
        for near in (hit.entry.id - 1, hit.entry.id + 1):
            other = by_id.get(near)
            if (
                near in kept
                and other is not None
                and (other.entry.kind, other.entry.source)
                == (
                    hit.entry.kind,
                    hit.entry.source,
                )
            ):
                return True
        return False

    return [hit for hit in hits if hit.entry.id in kept or beside_kept(hit)]
