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
from datetime import datetime
from typing import Literal

from lore.embed import Vectors
from lore.ports.search import SearchIndexPort as SearchIndex
from lore.ports.search import Stored
from lore.search.feedback import feedback_ranking
from lore.search.hit import Hit, snippet
from lore.search.lifts import group_of, lift_sessions, weigh_summaries
from lore.search.relevance import anchor_floor, hub_floors, keep_relevant
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


@dataclass
class _Lists:
    """What the two searches found: each list's ranks, and the query's vector with the
    cosine of each vector hit and this query's relevance floor (None: text only)."""

    text_rank: dict[int, int]
    vector_rank: dict[int, int]
    vector: Vectors | None = None
    similarity: dict[int, float] = field(default_factory=dict)
    floor: float | None = None


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
    (a time the query names) lets the reranker favour entries near it. The stages are
    those of the module's docstring, in its order."""
    query = query.strip()
    if not query or not scopes or limit <= 0:
        return []
    moment = now.timestamp() if isinstance(now, datetime) else now
    ranged = after is not None or before is not None
    wanted = max(fusion.candidates, limit * 3) * (4 if ranged else 1)
    lists = _candidates(index, query, scopes, mode=mode, wanted=wanted, now=moment)
    fused = _fuse(lists, fusion)
    if lists.vector is not None and fusion.feedback:
        _add_feedback(index, scopes, lists.vector, fused, fusion, wanted=wanted, now=moment)
    entries = _with_neighbours(index, fused, lists.vector, fusion, scopes, after, before)
    if lists.vector is not None and fusion.window and fusion.window_weight:
        _add_window(index, lists.vector, fused, entries, fusion)
    scores = {i: s for i, s in fused.items() if i in entries}  # gone, or out of range
    _lift_neighbours(scores, entries, fusion)
    lift_sessions(scores, entries, fusion.session_weight)
    weigh_summaries(scores, entries, fusion.summary_weight)
    if fusion.rerank or reranker is not None:
        scores = _rerank(query, scores, entries, fusion, reranker, about)
    _prefer_recent(scores, entries, fusion, now=moment)
    hits = _pick(entries, scores, lists.text_rank, lists.vector_rank, limit, fusion)
    if lists.floor is None:
        return hits
    # Relevant or absent: a hit found by meaning alone must clear this query's floor,
    # and be nearer the query than a query about nothing is to it.
    return keep_relevant(hits, lists.similarity, lists.floor, _hubs(index, query, hits))


def _candidates(
    index: SearchIndex, query: str, scopes: Sequence[str], *, mode: Mode, wanted: int, now: float
) -> _Lists:
    """Stage 1: each list's pool. The query's embedding (C code, without the GIL) runs
    while the index ranks the text; an embedder that fails leaves the text list alone."""
    embedding = (
        None if mode == "text" else _embedder().submit(index.embedder.embed_queries, [query])
    )
    text_ids = [] if mode == "vector" else index.text_search(scopes, query, limit=wanted, now=now)
    lists = _Lists(_ranks(text_ids), {})
    if embedding is None:
        return lists
    try:
        vector = embedding.result()[0]
    except (ImportError, OSError, RuntimeError) as exc:  # degrade to text, never fail
        log.warning("embedding the query failed, searching by text only: %s", exc)
        return lists
    found = index.vector_search(scopes, vector, limit=wanted, now=now)
    lists.vector_rank = _ranks([entry_id for entry_id, _ in found])
    lists.vector = vector
    lists.similarity = dict(found)
    lists.floor = anchor_floor(index.embedder, vector)
    return lists


def _ranks(ids: Sequence[int]) -> dict[int, int]:
    return {entry_id: rank for rank, entry_id in enumerate(ids, 1)}


def _fuse(lists: _Lists, fusion: Fusion) -> dict[int, float]:
    """Stage 2: reciprocal rank fusion, the text list weighted above the vector list."""
    fused: dict[int, float] = {}
    for ranks, weight in ((lists.text_rank, fusion.text_weight), (lists.vector_rank, 1.0)):
        for entry_id, rank in ranks.items():
            fused[entry_id] = fused.get(entry_id, 0.0) + weight / (fusion.rrf_k + rank)
    return fused


def _add_feedback(
    index: SearchIndex,
    scopes: Sequence[str],
    vector: Vectors,
    fused: dict[int, float],
    fusion: Fusion,
    *,
    wanted: int,
    now: float,
) -> None:
    """Pseudo-relevance feedback (off by default): a list from the best entries' vectors."""
    again = feedback_ranking(
        index, scopes, vector, fused, top=fusion.feedback, weight=fusion.feedback_weight,
        limit=wanted, now=now,
    )  # fmt: skip
    for rank, entry_id in enumerate(again, 1):
        fused[entry_id] = fused.get(entry_id, 0.0) + 1.0 / (fusion.rrf_k + rank)


def _with_neighbours(
    index: SearchIndex,
    fused: dict[int, float],
    vector: Vectors | None,
    fusion: Fusion,
    scopes: Sequence[str],
    after: float | None,
    before: float | None,
) -> dict[int, Stored]:
    """The candidates and their neighbours, read once, in these scopes and the range.

    A session's messages (a file's chunks) are indexed in order, in one transaction, so
    their entry ids are consecutive: an entry's neighbours are id - 1 and id + 1. Without
    a query vector there is no window to read: only the lift's neighbours."""
    reach = max(1, fusion.window) if vector is not None else 1
    nearby = {i + d for i in fused for d in range(-reach, reach + 1)}
    entries = index.fetch(sorted(nearby | fused.keys()))
    allowed = set(scopes)
    return {i: e for i, e in entries.items() if e.scope in allowed and _in_range(e, after, before)}


def _add_window(
    index: SearchIndex,
    vector: Vectors,
    fused: dict[int, float],
    entries: dict[int, Stored],
    fusion: Fusion,
) -> None:
    """Stage 3: the turn in its context, fused as a third, lighter list."""
    for rank, entry_id in enumerate(_window_ranking(index, vector, entries, fusion.window), 1):
        fused[entry_id] = fused.get(entry_id, 0.0) + fusion.window_weight / (fusion.rrf_k + rank)


def _lift_neighbours(scores: dict[int, float], entries: dict[int, Stored], fusion: Fusion) -> None:
    """Stage 4: the turns just before and after a hit score at least a share of it."""
    for entry_id, score in list(scores.items()):
        entry = entries[entry_id]
        if entry.kind == "memory":
            continue
        around = ((entry_id - 1, fusion.previous_share), (entry_id + 1, fusion.neighbour_share))
        for near, share in around:
            other = entries.get(near)
            if other is not None and _same_source(other, entry):
                scores[near] = max(scores.get(near, 0.0), share * score)


def _rerank(
    query: str,
    scores: dict[int, float],
    entries: dict[int, Stored],
    fusion: Fusion,
    reranker: Reranker | None,
    about: TimeSpan | None,
) -> dict[int, float]:
    """Stage 6: the reranking seam (the feature reranker unless one is given)."""
    chosen = reranker or FeatureReranker(
        speaker_bonus=fusion.speaker_bonus, coverage_bonus=fusion.coverage_bonus
    )
    ids = list(scores)
    new = chosen.rerank(query, [Candidate(entries[i], scores[i]) for i in ids], about=about)
    return dict(zip(ids, new, strict=True))


def _prefer_recent(
    scores: dict[int, float], entries: dict[int, Stored], fusion: Fusion, *, now: float
) -> None:
    """Stage 7: a mild recency prior, halving with the configured half-life."""
    half_life = fusion.recency_half_life_days * 86400.0
    for entry_id in scores:
        age = max(0.0, now - entries[entry_id].at)
        scores[entry_id] *= 1.0 + fusion.recency_weight * 0.5 ** (age / half_life)


def _hubs(index: SearchIndex, query: str, hits: Sequence[Hit]) -> dict[int, float]:
    """The hub floor of each hit found by meaning alone (lore.search.relevance)."""
    by_scope: dict[str, list[int]] = {}
    for hit in hits:
        if hit.text_rank is None and hit.entry.kind == "message":
            by_scope.setdefault(hit.entry.scope, []).append(hit.entry.id)
    vectors: dict[int, Vectors] = {}
    for scope, ids in by_scope.items():
        vectors.update(index.vectors_of(scope, ids))
    return hub_floors(index.embedder, query, vectors)


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
    """Stage 8, the final cut, best first: near-duplicates fold into the better copy, and (with a
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
