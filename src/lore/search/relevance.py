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

Short chat lines ("hello there", "ok thanks", "⏰ Reminder: call mom") sit close to every
query in e5's space, closer than any statement: "xylophone quantum volcano" scored them
above the statement anchors. So the anchors hold such lines too, and the rule is also
read from the hit's side: a hit found by meaning alone must be nearer the query than to
any of a few neutral queries (everyday words, greetings), or it is only near everything.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lore.embed import Embedder, Vectors
    from lore.search.hit import Hit

__all__ = [
    "ANCHORS",
    "BAND",
    "MARGIN",
    "NEUTRAL_QUERIES",
    "anchor_floor",
    "hub_floors",
    "keep_relevant",
    "script_of",
]

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
# Queries about nothing in particular, by writing system: a hit nearer one of them (in
# the query's own script) than to the query is near everything, not near the query.
# Another script's neutral queries would drop the answer to a question asked in one
# language about a message in another, which sits lower than within one language.
NEUTRAL_QUERIES = {
    "latin": (*"chair weather evening yesterday book hello thanks okay".split(), *ANCHORS[:4]),
    "cjk": (*"椅子 天气 晚上 书 你好 谢谢 好的".split(), *ANCHORS[4:8]),
    "cyrillic": (*"стул погода вечер книга привет спасибо хорошо".split(), *ANCHORS[8:12]),
}
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CYRILLIC = re.compile("[\u0400-\u04ff]")
MARGIN = 0.015
BAND = 0.01

_anchors: dict[str, Vectors] = {}
_neutral: dict[str, Vectors] = {}
_lock = threading.Lock()


def anchor_floor(embedder: Embedder, query: Vectors) -> float:
    """How similar the nearest neutral anchor sentence is to this query."""
    with _lock:
        vectors = _anchors.get(embedder.name)
        if vectors is None:
            vectors = _anchors[embedder.name] = embedder.embed_passages(ANCHORS)
    return float(np.max(vectors @ query.reshape(-1)))


def script_of(text: str) -> str:
    """Which of NEUTRAL_QUERIES' writing systems `text` is written in."""
    if _CJK.search(text):
        return "cjk"
    return "cyrillic" if _CYRILLIC.search(text) else "latin"


def hub_floors(embedder: Embedder, query: str, passages: Mapping[int, Vectors]) -> dict[int, float]:
    """For each entry, how similar the nearest neutral query (in `query`'s script) is to
    it: what a query about nothing scores against it."""
    if not passages:
        return {}
    script = script_of(query)
    key = f"{embedder.name}/{script}"
    with _lock:
        vectors = _neutral.get(key)
        if vectors is None:
            vectors = _neutral[key] = embedder.embed_queries(NEUTRAL_QUERIES[script])
    ids = list(passages)
    best = (np.stack([passages[i] for i in ids]) @ vectors.T).max(axis=1)
    return {entry_id: float(score) for entry_id, score in zip(ids, best, strict=True)}


def keep_relevant(
    hits: Sequence[Hit],
    similarity: Mapping[int, float],
    floor: float,
    hubs: Mapping[int, float] | None = None,
) -> list[Hit]:
    """`hits` without those that matched no word and whose similarity does not clear
    `floor` (+ MARGIN, but for the nearest within BAND) and their own hub floor (`hubs`:
    what a neutral query scores against each); a message right beside a kept one in the
    same session stays with it (the question before an answer, the answer after a
    question)."""
    nearest = max(similarity.values(), default=0.0)

    def clears(entry_id: int) -> bool:
        score = similarity.get(entry_id)
        if score is None:
            return False
        if hubs is not None and score <= hubs.get(entry_id, -1.0):
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
