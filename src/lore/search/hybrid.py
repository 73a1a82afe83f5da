"""One ranked answer from two searches: BM25 over terms and cosine over e5 vectors.

The stages, each measured alone by `bench/retrieval.py --ablate`:
1. a candidate pool from each list (50, or more for a time range, which filters it);
2. reciprocal rank fusion (only ranks count, so BM25 and cosine scores never need
   calibrating against each other), the BM25 list weighted 1.4 : 1;
3. the turn in its context: candidates and their neighbours ranked by the cosine of the
   query with the mean vector of the turn and two turns either side, fused as a third,
   half-weight list (a story told over several turns is found where no single turn
   matches);
4. the neighbour lift: the turns just before and after a hit score at least 70 % of it
   (the answer to a question is usually the next turn, and shares few words with it);
5. the session lift (`lore.search.lifts`): a session whose candidates match the query
   as a whole lifts each of them by up to 30 %; a closed session's summary counts 0.7
   of what it would (its transcript's own turns come first);
6. the reranking seam (`lore.search.rerank`): the speaker the query names (a person's
   own turns count double), the share of the query's content words a turn holds, the
   time it names;
7. a mild recency prior (at most +10 %, halving every 90 days);
8. the cut: near-duplicates (the same fact as a memory, a note line and a chat turn)
   collapse into the best-ranked copy; an optional per-session decay spreads the list
   over sessions (off: on LoCoMo it cost recall, since evidence sits in runs of turns).
Pseudo-relevance feedback (`lore.search.feedback`) is there, off: it cost recall.
Scopes and time ranges are applied to the candidates, never by filtering a final list.
The settings were chosen once on three of LoCoMo's five development conversations and
apply to every query alike.
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

from lore.embed import Vectors
from lore.ports.search import SearchIndexPort as SearchIndex
from lore.ports.search import Stored
from lore.search.feedback import feedback_ranking
from lore.search.lifts import group_of, lift_sessions, weigh_summaries
from lore.search.relevance import anchor_floor, keep_relevant
from lore.search.rerank import Candidate, FeatureReranker, Reranker, TimeSpan
from lore.text import normalise

__all__ = ["DEFAULT_FUSION", "Fusion", "Hit", "Mode", "search", "snippet"]

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "text", "vector"]


@dataclass(frozen=True)
class Fusion:
    """How the lists are merged. One setting for every query: no per-question tuning."""

    rrf_k: float = 10.0
    candidates: int = 50  # taken from each list before fusing
    neighbour_share: float = 0.7  # the turn after a hit scores at least this share of it
    previous_share: float = 0.7  # and the turn before it this share
    text_weight: float = 1.4  # the BM25 list's weight in the fusion (the vector list: 1)
    window: int = 2  # turns either side whose vectors join a turn's own (0: none)
    window_weight: float = 0.5  # the weight of that window's cosine ranking, a third list
    session_decay: float = 1.0  # each pick from a session already picked scores × this
    session_weight: float = 0.3  # the session lift: at most this share more for a session
    summary_weight: float = 0.7  # a session summary's score × this
    feedback: int = 0  # pseudo-relevance feedback from this many best fused entries (0: off)
    feedback_weight: float = 0.5  # their mean vector's weight beside the query's
    rerank: bool = True  # the feature reranker (speaker, time) after fusing
    speaker_bonus: float = 1.0  # the feature reranker's lift for the speaker a query names
    coverage_bonus: float = 0.15  # its lift for a turn holding all the query's content words
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
    superseded_by: int | None = None  # a message stating a memory's old value

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
            "superseded_by": self.superseded_by,
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
    after: float | None = None,
    before: float | None = None,
    about: TimeSpan | None = None,
    reranker: Reranker | None = None,
) -> list[Hit]:
    """The best `limit` entries of these scopes for `query`, near-duplicates collapsed.
    `after`/`before` keep only entries said in that range or about a time in it; `about`
    (a time the query names) lets the reranker favour entries near it."""
    query = query.strip()
    if not query or not scopes or limit <= 0:
        return []
    moment = now.timestamp() if isinstance(now, datetime) else now
    ranged = after is not None or before is not None
    wanted = max(fusion.candidates, limit * 3) * (4 if ranged else 1)
    # The query's embedding (C code, without the GIL) runs while SQLite ranks the text.
    embedding = (
        None if mode == "text" else _embedder().submit(index.embedder.embed_queries, [query])
    )
    text_ids = (
        [] if mode == "vector" else index.text_search(scopes, query, limit=wanted, now=moment)
    )
    vector_ids: list[int] = []
    vector: Vectors | None = None
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
    for ranks, weight in ((text_rank, fusion.text_weight), (vector_rank, 1.0)):
        for entry_id, rank in ranks.items():
            fused[entry_id] = fused.get(entry_id, 0.0) + weight / (fusion.rrf_k + rank)
    if vector is not None and fusion.feedback:
        again = feedback_ranking(
            index, scopes, vector, fused, top=fusion.feedback, weight=fusion.feedback_weight,
            limit=wanted, now=moment,
        )  # fmt: skip
        for rank, entry_id in enumerate(again, 1):
            fused[entry_id] = fused.get(entry_id, 0.0) + 1.0 / (fusion.rrf_k + rank)
    # A session's messages (a file's chunks) are indexed in order, in one transaction,
    # so their entry ids are consecutive: an entry's neighbours are id - 1 and id + 1.
    # Without a query vector there is no window to read: only the lift's neighbours.
    reach = max(1, fusion.window) if vector is not None else 1
    nearby = {i + d for i in fused for d in range(-reach, reach + 1)}
    entries = index.fetch(sorted(nearby | fused.keys()))
    allowed = set(scopes)
    entries = {
        i: e for i, e in entries.items() if e.scope in allowed and _in_range(e, after, before)
    }
    if vector is not None and fusion.window and fusion.window_weight:
        window_ids = _window_ranking(index, vector, entries, fusion.window)
        for rank, entry_id in enumerate(window_ids, 1):
            share = fusion.window_weight / (fusion.rrf_k + rank)
            fused[entry_id] = fused.get(entry_id, 0.0) + share
    scores = {i: s for i, s in fused.items() if i in entries}  # gone, or out of range
    for entry_id, score in list(scores.items()):
        entry = entries[entry_id]
        if entry.kind == "memory":
            continue
        around = ((entry_id - 1, fusion.previous_share), (entry_id + 1, fusion.neighbour_share))
        for near, share in around:
            other = entries.get(near)
            if other is not None and _same_source(other, entry):
                scores[near] = max(scores.get(near, 0.0), share * score)
    lift_sessions(scores, entries, fusion.session_weight)
    weigh_summaries(scores, entries, fusion.summary_weight)
    if fusion.rerank or reranker is not None:
        chosen = reranker or FeatureReranker(
            speaker_bonus=fusion.speaker_bonus, coverage_bonus=fusion.coverage_bonus
        )
        ids = list(scores)
        new = chosen.rerank(query, [Candidate(entries[i], scores[i]) for i in ids], about=about)
        scores = dict(zip(ids, new, strict=True))
    half_life = fusion.recency_half_life_days * 86400.0
    for entry_id in scores:
        age = max(0.0, moment - entries[entry_id].at)
        scores[entry_id] *= 1.0 + fusion.recency_weight * 0.5 ** (age / half_life)
    hits = _pick(entries, scores, text_rank, vector_rank, limit, fusion)
    # Relevant or absent: a hit found by meaning alone must clear this query's floor.
    return hits if floor is None else keep_relevant(hits, similarity, floor)


def _in_range(entry: Stored, after: float | None, before: float | None) -> bool:
    """Said in the range, or about a time that overlaps it ("last week" said today)."""
    low = -float("inf") if after is None else after
    high = float("inf") if before is None else before
    if low <= entry.at < high:
        return True
    start, end = entry.about_start, entry.about_end
    return start is not None and end is not None and start < high and end > low


def _same_source(a: Stored, b: Stored) -> bool:
    return (a.kind, a.source, a.scope) == (b.kind, b.source, b.scope)


def _window_ranking(
    index: SearchIndex, query: Vectors, entries: dict[int, Stored], window: int
) -> list[int]:
    """Entry ids ranked by the cosine of the query with the mean vector of the entry and
    its `window` neighbours either side (same session or file): a turn read in its
    context. A memory stands alone, so its window is itself."""
    import numpy as np

    vectors: dict[int, Vectors] = {}
    by_scope: dict[str, list[int]] = {}
    for entry_id, entry in entries.items():
        by_scope.setdefault(entry.scope, []).append(entry_id)
    for scope, ids in by_scope.items():
        vectors.update(index.vectors_of(scope, ids))
    if not vectors:
        return []
    ids = sorted(vectors)
    row_of = {entry_id: n for n, entry_id in enumerate(ids)}
    # Row n + 1 of `matrix` is entry ids[n]; row 0 stays zero for a missing neighbour.
    matrix = np.zeros((len(ids) + 1, query.shape[-1]), dtype=np.float32)
    matrix[1:] = np.stack([vectors[i] for i in ids])
    members = np.zeros((len(ids), 2 * window + 1), dtype=np.int64)
    for n, entry_id in enumerate(ids):
        entry = entries[entry_id]
        members[n, 0] = n + 1
        if entry.kind == "memory":
            continue
        for d in range(1, window + 1):
            for slot, near in ((2 * d - 1, entry_id - d), (2 * d, entry_id + d)):
                other = entries.get(near)
                if other is not None and near in row_of and _same_source(other, entry):
                    members[n, slot] = row_of[near] + 1
    totals = matrix[members].sum(axis=1)  # each entry's window, summed
    norms = np.linalg.norm(totals, axis=1)
    norms[norms == 0] = 1.0
    scores = (totals @ query.reshape(-1)) / norms
    order = sorted(range(len(ids)), key=lambda n: (-float(scores[n]), ids[n]))
    return [ids[n] for n in order]


def _pick(
    entries: dict[int, Stored],
    scores: dict[int, float],
    text_rank: dict[int, int],
    vector_rank: dict[int, int],
    limit: int,
    fusion: Fusion,
) -> list[Hit]:
    """The final cut, best first: near-duplicates fold into the better copy, and (with a
    session decay) each further pick from one session counts for less, so one long
    session cannot fill every place."""
    hits: list[Hit] = []
    shingles: list[set[str]] = []
    picked: dict[tuple[str, str], int] = {}
    order = sorted(scores, key=lambda i: (-scores[i], i))
    pool = order[: max(limit * 6, 60)]
    while pool and len(hits) < limit:
        best = max(
            range(len(pool)),
            key=lambda n: (
                scores[pool[n]] * fusion.session_decay ** picked.get(group_of(entries[pool[n]]), 0),
                -n,
            ),
        )
        entry_id = pool.pop(best)
        entry = entries[entry_id]
        grams = _trigrams(entry.text)
        twin = _near_duplicate(grams, shingles, fusion.duplicate_overlap)
        if twin is not None:
            hits[twin].duplicates.append(entry)
            continue
        group = group_of(entry)
        picked[group] = picked.get(group, 0) + 1
        hits.append(
            Hit(entry, scores[entry_id], text_rank.get(entry_id), vector_rank.get(entry_id))
        )
        shingles.append(grams)
    return hits


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
