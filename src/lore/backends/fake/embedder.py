"""An embedder for tests that do not judge search quality: character bigrams hashed into
64 dimensions, so texts sharing words are near and no model is loaded (microseconds a
text, where the real model takes milliseconds)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["HashEmbedder"]


class HashEmbedder:
    """Character bigrams hashed into 64 dimensions: texts sharing words are near, and no
    model is loaded. Deterministic across processes (no `hash()`)."""

    name = "hash-64"
    dim = 64

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.embed_passages(texts)

    def embed_passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            folded = f" {text.casefold()} "
            for i in range(len(folded) - 1):
                bucket = zlib.crc32(folded[i : i + 2].encode("utf-8")) % self.dim
                rows[row, bucket] += 1.0
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return rows
