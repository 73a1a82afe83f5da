"""One ranked answer from two searches: BM25 over terms and cosine over e5 vectors.

The two lists are fused by reciprocal rank (RRF: only ranks count, so BM25 and cosine
scores never need calibrating against each other). A small neighbour window then lifts
the messages (note chunks) just before and after each hit in the same session (file) to
at least 70 % of its score: the answer to a question is usually the next turn, and it
shares few words with the question. A mild recency prior follows (at most +10 %,
halving every 90 days), then near-duplicates (the same fact as a memory, a note line and
a chat turn) collapse into the best-ranked copy. Scopes are applied inside each search,
never by filtering a result list afterwards. The settings were chosen once on LoCoMo's
development split (bench/retrieval.py) and apply to every query alike.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from lore.ports.search import SearchIndexPort as SearchIndex
from lore.ports.search import Stored
from lore.search.relevance import anchor_floor, keep_relevant
from lore.text import normalise

__all__ = ["DEFAULT_FUSION", "Fusion", "Hit", "Mode", "search", "snippet"]

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "text", "vector"]


@dataclass(frozen=True)
class Fusion:
    """How the lists are merged. One setting for every query: no per-question tuning."""

    rrf_k: float = 10.0
    candidates: int = 50  # taken from each list before fusing
    neighbour_share: float = 0.7  # a hit's neighbours score at least this share of it
    recency_weight: float = 0.1
    recency_half_life_days: float = 90.0
    duplicate_overlap: float = 0.85  # Jaccard of character trigrams


DEFAULT_FUSION = Fusion()


@dataclass(frozen=True)
class Hit:
    entry: Stored
    score: float
    text_rank: int | None  # 1-based rank in each list, None when absent
    vector_rank: int | None
    duplicates: list[Stored] = field(default_factory=list)

    @property
    def source(self) -> dict[str, Any]:
        e = self.entry
        if e.kind == "memory":
            return {"kind": "memory", "memory_id": e.locator}
        if e.kind == "note":
            return {"kind": "note", "path": e.source, "line": e.locator}
        return {"kind": "message", "session_id": e.source, "message_index": e.locator}

    @property
    def label(self) -> str:
        e = self.entry
        if e.kind == "memory":
            return f"memory #{e.locator}"
        if e.kind == "note":
            return f"{e.source}:{e.locator}"
        return f"session {e.source} message {e.locator}"

    def to_dict(self, query: str = "") -> dict[str, Any]:
        return {
            "source": self.source,
            "scope": self.entry.scope,
            "time": datetime.fromtimestamp(self.entry.at, UTC).isoformat(timespec="seconds"),
            "speaker": self.entry.speaker,
            "text": snippet(self.entry.text, query) if query else self.entry.text,
            "score": round(self.score, 6),
            "matched": [
                n for n, r in (("text", self.text_rank), ("vector", self.vector_rank)) if r
            ],
            "duplicates": len(self.duplicates),
        }


def search(
    index: SearchIndex,
    query: str,
    scopes: Sequence[str],
    *,
    now: datetime | float,
    limit: int = 10,
    mode: Mode = "hybrid",
    fusion: Fusion = DEFAULT_FUSION,
) -> list[Hit]:
    """The best `limit` entries of these scopes for `query`, near-duplicates collapsed."""
    query = query.strip()
    if not query or not scopes or limit <= 0:
        return []
    moment = now.timestamp() if isinstance(now, datetime) else now
    wanted = max(fusion.candidates, limit * 3)
    # The query's embedding (C code, without the GIL) runs while SQLite ranks the text.
    embedding = (
        None if mode == "text" else _embedder().submit(index.embedder.embed_queries, [query])
    )
    text_ids = (
        [] if mode == "vector" else index.text_search(scopes, query, limit=wanted, now=moment)
    )
    vector_ids: list[int] = []
    similarity: dict[int, float] = {}
    floor: float | None = None
    if embedding is not None:
        try:
            vector = embedding.result()[0]
        except (ImportError, OSError, RuntimeError) as exc:  # degrade to text, never fail
            log.warning("embedding the query failed, searching by text only: %s", exc)
        else:
            found = index.vector_search(scopes, vector, limit=wanted, now=moment)
            vector_ids = [entry_id for entry_id, _ in found]
            similarity = dict(found)
            floor = anchor_floor(index.embedder, vector)

    fused: dict[int, float] = {}
    text_rank = {entry_id: rank for rank, entry_id in enumerate(text_ids, 1)}
    vector_rank = {entry_id: rank for rank, entry_id in enumerate(vector_ids, 1)}
    for ranks in (text_rank, vector_rank):
        for entry_id, rank in ranks.items():
            fused[entry_id] = fused.get(entry_id, 0.0) + 1.0 / (fusion.rrf_k + rank)
    # A session's messages (a file's chunks) are indexed in order, in one transaction,
    # so their entry ids are consecutive: an entry's neighbours are id - 1 and id + 1.
    nearby = {j for i in fused for j in (i - 1, i + 1)}
    entries = index.fetch(sorted(nearby | fused.keys()))
    scores = {i: s for i, s in fused.items() if i in entries}  # gone since the search
    allowed = set(scopes)
    for entry_id, score in fused.items():
        entry = entries.get(entry_id)
        if entry is None or entry.kind == "memory":
            continue
        for near in (entry_id - 1, entry_id + 1):
            other = entries.get(near)
            if (
                other is not None
                and (other.kind, other.source, other.scope)
                == (entry.kind, entry.source, entry.scope)
                and other.scope in allowed
            ):
                scores[near] = max(scores.get(near, 0.0), fusion.neighbour_share * score)
    half_life = fusion.recency_half_life_days * 86400.0
    for entry_id in scores:
        age = max(0.0, moment - entries[entry_id].at)
        scores[entry_id] *= 1.0 + fusion.recency_weight * 0.5 ** (age / half_life)

    hits: list[Hit] = []
    shingles: list[set[str]] = []
    for entry_id in sorted(scores, key=lambda i: (-scores[i], i)):
        entry = entries[entry_id]
        grams = _trigrams(entry.text)
        twin = _near_duplicate(grams, shingles, fusion.duplicate_overlap)
        if twin is not None:
            hits[twin].duplicates.append(entry)
            continue
        if len(hits) == limit:
            break
        hits.append(
            Hit(entry, scores[entry_id], text_rank.get(entry_id), vector_rank.get(entry_id))
        )
        shingles.append(grams)
    # Relevant or absent: a hit found by meaning alone must clear this query's floor.
    return hits if floor is None else keep_relevant(hits, similarity, floor)


_query_embedder: ThreadPoolExecutor | None = None
_query_embedder_lock = threading.Lock()


def _embedder() -> ThreadPoolExecutor:
    """One thread that embeds queries beside the text search."""
    global _query_embedder
    with _query_embedder_lock:
        if _query_embedder is None:
            _query_embedder = ThreadPoolExecutor(1, thread_name_prefix="query-embedding")
        return _query_embedder


def _trigrams(text: str) -> set[str]:
    flat = re.sub(r"[\W_]+", "", normalise(text))
    if len(flat) < 3:
        return {flat}
    return {flat[i : i + 3] for i in range(len(flat) - 2)}


def _near_duplicate(grams: set[str], kept: list[set[str]], threshold: float) -> int | None:
    for position, other in enumerate(kept):
        union = len(grams | other)
        if union and len(grams & other) / union >= threshold:
            return position
    return None


_TERM = re.compile(r"[^\W_]{2,}")


def snippet(text: str, query: str, width: int = 280) -> str:
    """`text` cut to about `width` characters around the first place the query matches."""
    if len(text) <= width:
        return text
    lowered = normalise(text)
    positions = [lowered.find(t) for t in _TERM.findall(normalise(query)) if len(t) >= 2]
    # A CJK query word is often longer than the text's word: try its first two characters.
    positions += [lowered.find(t[:2]) for t in _TERM.findall(normalise(query)) if len(t) > 2]
    found = [p for p in positions if p >= 0]
    start = max(0, min(found) - width // 3) if found else 0
    end = min(len(text), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
