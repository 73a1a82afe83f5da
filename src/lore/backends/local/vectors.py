"""The vectors of one scope in memory, searched by brute force, for one process.

Rows stay int8 as stored (384 bytes a row: 100,000 rows are 37 MiB, where float32 would
be 147 MiB), grown in place by appending what is newer than the last load, never rebuilt.
Scores are exact cosines computed a block at a time (int8 → float32 for a few thousand
rows, then a dot product), so no float copy of the whole matrix ever exists.

Past `exact_rows` rows, a search first ranks every row by the Hamming distance between
sign bits (each row minus the mean row, 48 bytes a row, kept beside the int8 rows), then
scores only the best `shortlist` of those exactly. The first stage reads an eighth of
the bytes and costs a few XORs and popcounts per row; the shortlist is wide (at least
80 times what is asked for) so the exact top of a result rarely changes. Scopes below
`exact_rows` (every conversation of the LoCoMo benchmark) are ranked exactly as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["VectorMatrix"]

Vectors = NDArray[np.float32]

_Array = TypeVar("_Array", NDArray[np.int64], NDArray[np.float32], NDArray[np.float64])
_BLOCK = 512  # rows turned into float32 at a time: 768 KiB, reused from cache


@dataclass
class VectorMatrix:
    """Stored vectors of one scope, appended as rows (entry id, scale, int8 bytes, expiry)
    in increasing id order."""

    exact_rows: int = 20_000
    shortlist: int = 4_000
    ids: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    codes: NDArray[np.int8] = field(default_factory=lambda: np.zeros((0, 0), np.int8))
    inverse_norms: NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, np.float32))
    expires: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    count: int = 0
    watermark: int = 0
    # Sign bits of (row - centre), one uint64 array per 64 dimensions (column-major, so
    # each XOR reads contiguous memory); built once the matrix passes `exact_rows`.
    centre: NDArray[np.float32] | None = None
    bits: NDArray[np.uint64] = field(default_factory=lambda: np.zeros((0, 0), np.uint64))

    @property
    def nbytes(self) -> int:
        arrays = (self.ids, self.codes, self.inverse_norms, self.expires, self.bits)
        return sum(a.nbytes for a in arrays)

    def reserve(self, rows: int, dim: int) -> None:
        """Room for `rows` rows in all, so a first load copies nothing as it grows."""
        if rows > len(self.ids):
            self._grow(rows, dim, exact=True)

    def append(self, rows: Sequence[tuple[int, float, bytes, float | None]]) -> None:
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        raw = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8)
        block = raw.reshape(len(rows), -1)
        # The scale is one positive factor per row: cosine needs only the int8 row's norm.
        norms = np.concatenate(
            [_norms(block[i : i + _BLOCK]) for i in range(0, len(block), _BLOCK)]
        )
        expires = np.fromiter(
            (math.inf if r[3] is None else r[3] for r in rows), dtype=np.float64, count=len(rows)
        )
        needed = self.count + len(rows)
        if needed > len(self.ids) or self.codes.shape[1] != block.shape[1]:
            self._grow(needed, block.shape[1])
        self.codes[self.count : needed] = block
        self.ids[self.count : needed] = ids
        self.inverse_norms[self.count : needed] = 1.0 / np.maximum(norms, 1e-12)
        self.expires[self.count : needed] = expires
        if self.centre is not None:
            for first in range(0, len(block), _BLOCK):
                at = self.count + first
                part = block[first : first + _BLOCK]
                self.bits[:, at : at + len(part)] = self._sign_bits(part)
        self.count = needed
        self.watermark = int(ids[-1])
        if self.centre is None and self.count > self.exact_rows:
            self._build_bits()

    def top(
        self, query: Vectors, limit: int, now: float, *, exact: bool = False
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The ids and cosines of the best `limit` unexpired rows; `exact` skips the first
        stage whatever the size (to measure what it costs in recall)."""
        if self.count == 0 or limit <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        live = self.expires[: self.count] > now
        vector = query.reshape(-1).astype(np.float32)
        if exact or self.centre is None or self.count <= max(self.exact_rows, self.shortlist):
            candidates = np.arange(self.count)
            scores = self._scores(candidates, vector)
        else:
            wide = max(self.shortlist, 80 * limit)
            candidates = self._shortlist(vector, live, wide)
            scores = self._scores(candidates, vector)
        scores[~live[candidates]] = -np.inf
        k = min(limit, len(candidates))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.isfinite(scores[best])]
        return self.ids[candidates[best]], scores[best]

    def rows(self, ids: Sequence[int]) -> dict[int, Vectors]:
        if not len(ids) or self.count == 0:
            return {}
        # One searchsorted and one conversion for every asked id, not one per id.
        known = self.ids[: self.count]
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(known, wanted), self.count - 1)
        hit = known[at] == wanted
        at = at[hit]
        rows = self.codes[at].astype(np.float32) * self.inverse_norms[at, None]
        return dict(zip(wanted[hit].tolist(), rows, strict=True))

    # -- inside ---------------------------------------------------------------------------

    def _grow(self, needed: int, dim: int, *, exact: bool = False) -> None:
        capacity = needed if exact else max(needed, len(self.ids) + len(self.ids) // 2, 64)
        codes = np.zeros((capacity, dim), dtype=np.int8)
        if self.count and self.codes.shape[1] == dim:
            codes[: self.count] = self.codes[: self.count]
        self.codes = codes
        self.ids = _resized(self.ids, capacity)
        self.inverse_norms = _resized(self.inverse_norms, capacity)
        self.expires = _resized(self.expires, capacity)
        if self.centre is not None:
            bits = np.zeros((self.bits.shape[0], capacity), dtype=np.uint64)
            bits[:, : self.count] = self.bits[:, : self.count]
            self.bits = bits

    def _scores(self, positions: NDArray[np.int64], vector: Vectors) -> NDArray[np.float32]:
        """Exact cosines of these rows, converted to float32 a block at a time."""
        scores = np.empty(len(positions), dtype=np.float32)
        contiguous = len(positions) == self.count
        for first in range(0, len(positions), _BLOCK):
            if contiguous:
                block = self.codes[first : min(first + _BLOCK, self.count)]
            else:
                block = self.codes[positions[first : first + _BLOCK]]
            # einsum's own loop, not BLAS: as fast for one query, and no BLAS threads left
            # spinning to slow the embedder's threads on the next query (2 cores).
            scores[first : first + len(block)] = np.einsum(
                "ij,j->i", block.astype(np.float32), vector
            )
        scores *= self.inverse_norms[positions]
        return scores

    def _build_bits(self) -> None:
        sample = self.codes[: self.count : max(1, self.count // 20_000)]
        self.centre = sample.astype(np.float32).mean(axis=0)
        words = (self.codes.shape[1] + 63) // 64
        self.bits = np.zeros((words, len(self.ids)), dtype=np.uint64)
        for first in range(0, self.count, _BLOCK):
            last = min(first + _BLOCK, self.count)
            self.bits[:, first:last] = self._sign_bits(self.codes[first:last])

    def _sign_bits(self, block: NDArray[np.int8]) -> NDArray[np.uint64]:
        assert self.centre is not None
        return _pack(block.astype(np.float32) > self.centre)

    def _shortlist(self, vector: Vectors, live: NDArray[np.bool_], wide: int) -> NDArray[np.int64]:
        """Positions of the `wide` live rows whose sign bits are nearest the query's."""
        assert self.centre is not None
        # The query is centred in the rows' scale (int8 rows are about 127 / max |x|
        # times the unit vector), so its signs line up with theirs.
        scale = 127.0 / max(float(np.abs(vector).max()), 1e-12)
        query_bits = _pack((vector * scale > self.centre)[None, :])[:, 0]
        distance = np.zeros(self.count, dtype=np.uint16)
        for word in range(self.bits.shape[0]):
            distance += np.bitwise_count(self.bits[word, : self.count] ^ query_bits[word])
        far = self.bits.shape[0] * 64 + 1  # past any real distance
        distance[~live] = far
        wide = min(wide, self.count)
        # Distances are small integers: count them, find the distance the `wide` nearest
        # reach, and take the rows within it (ties at that distance: the first ones). A
        # partition of every row would cost several times more.
        reached = np.cumsum(np.bincount(distance, minlength=far + 1))
        edge = int(np.searchsorted(reached, wide))
        inside = np.flatnonzero(distance < edge)
        at_edge = np.flatnonzero(distance == edge)[: wide - len(inside)]
        # In row order: the exact scores then read the int8 rows front to back.
        return np.sort(np.concatenate([inside, at_edge])).astype(np.int64)


def _norms(block: NDArray[np.int8]) -> NDArray[np.float32]:
    wide = block.astype(np.float32)
    squares: NDArray[np.float32] = np.einsum("ij,ij->i", wide, wide)
    return np.sqrt(squares)


def _pack(signs: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """Rows of booleans as uint64 words, one array per 64 columns (words × rows)."""
    rows, dim = signs.shape
    padded = np.zeros((rows, ((dim + 63) // 64) * 64), dtype=np.bool_)
    padded[:, :dim] = signs
    packed = np.packbits(padded, axis=1).view(np.uint64)
    return np.ascontiguousarray(packed.T)


def _resized(array: _Array, capacity: int) -> _Array:
    grown = np.zeros(capacity, dtype=array.dtype)
    grown[: min(len(array), capacity)] = array[:capacity]
    return grown
