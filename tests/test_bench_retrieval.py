"""The retrieval benchmark runs on any file in LoCoMo's format, not only the shared one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType

import pytest

from lore.cli.bench import load_bench, register


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("retrieval")


def conversation(sample_id: str, speakers: tuple[str, str]) -> dict[str, object]:
    a, b = speakers
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": a,
            "speaker_b": b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": a, "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit!"},
                {"speaker": b, "dia_id": "D1:2", "text": "Congrats! What breed is Biscuit?"},
                {"speaker": a, "dia_id": "D1:3", "text": "A corgi. He loves the beach."},
            ],
            "session_2_date_time": "10:00 am on 2 June, 2023",
            "session_2": [
                {"speaker": b, "dia_id": "D2:1", "text": "I signed up for a pottery class."},
                {
                    "speaker": a,
                    "dia_id": "D2:2",
                    "text": "Nice, send me a photo of your first bowl.",
                    "img_url": ["http://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a bowl",
                },
                {"speaker": b, "dia_id": "D2:3", "text": "I will, it is a blue one."},
            ],
        },
        "qa": [
            {
                "question": f"What breed is {a}'s dog?",
                "answer": "corgi",
                "evidence": ["D1:3"],
                "category": 4,
            },
            {
                "question": f"When did {b} start pottery?",
                "answer": "June 2023",
                "evidence": ["D2:1; D2:3"],
                "category": 2,
            },
            {
                "question": "Which pet and hobby came up?",
                "answer": "dog, pottery",
                "evidence": ["D:1:1", "D2:1", "D9:99"],
                "category": 1,
            },
            {
                "question": "What did they not discuss?",
                "adversarial_answer": "x",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {"question": "No evidence here", "answer": "x", "evidence": [], "category": 4},
        ],
        # Generated side data: a benchmark must never read it.
        "observation": {"session_1_observation": "corgi corgi corgi"},
        "session_summary": {"session_1_summary": "They discussed a corgi."},
        "event_summary": {},
    }


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-locomo.json"
    data = [conversation("t-1", ("Ana", "Bo")), conversation("t-2", ("Cy", "Di"))]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_evidence_ids_are_normalised_and_unknown_ones_dropped(bench: ModuleType) -> None:
    known = {"D8:6", "D9:17", "D11:26", "D1:1"}

    found = bench.normalise_evidence(["D8:6; D9:17", "D:11:26", "D1:1", "D4:4", "D1:1"], known)

    assert found == ["D8:6", "D9:17", "D11:26", "D1:1"]


def test_only_categories_one_to_four_with_evidence_are_asked(
    bench: ModuleType, locomo_file: Path
) -> None:
    (first, _) = bench.load(locomo_file)

    assert [(q.category, q.evidence) for q in first.questions] == [
        (4, ["D1:3"]),
        (2, ["D2:1", "D2:3"]),
        (1, ["D1:1", "D2:1"]),
    ]
    assert first.sessions[1].date.isoformat() == "2023-06-02T10:00:00+00:00"


@pytest.mark.search_quality
def test_the_benchmark_scores_lore_beside_bm25(
    bench: ModuleType, locomo_file: Path, tmp_path: Path
) -> None:
    report = bench.benchmark(
        locomo_file, progress=False, ablate=True, cache=tmp_path / "vectors.sqlite"
    )
    figures = bench.as_json(report)

    assert set(figures["ablations"]) == set(bench.ablations())
    assert figures["systems"]["Lore hybrid"]["overall"]["prompt_chars"] > 0
    assert "ablation" in bench.render(report) and "cost of recall" in bench.render(report)

    assert figures["conversations"] == 2
    assert set(figures["systems"]) == {"Lore hybrid", "BM25 (FTS5)"}
    for rows in figures["systems"].values():
        assert set(rows) == {
            "1 multi-hop",
            "2 temporal",
            "3 open-domain",
            "4 single-hop",
            "overall",
        }
        assert rows["overall"]["questions"] == 6
        for key in ("recall@5", "recall@10", "any@5", "any@10", "all@5", "all@10"):
            assert 0.0 <= rows["overall"][key] <= 1.0
        assert rows["overall"]["p95_ms"] >= rows["overall"]["p50_ms"] >= 0.0
    lore = figures["systems"]["Lore hybrid"]
    assert lore["overall"]["recall@10"] == 1.0  # six turns a conversation: all in the top ten
    assert lore["4 single-hop"]["recall@5"] == 1.0
    assert figures["notes"]["entries"] == 12
    assert "Lore hybrid" in bench.render(report) and "p50 ms" in bench.render(report)


def test_lore_bench_retrieval_prints_json(
    locomo_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="lore")
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["bench", "retrieval", str(locomo_file), "--json", "--limit-conversations", "1"]
    )

    assert args.func(args) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["conversations"] == 1
    assert figures["systems"]["BM25 (FTS5)"]["overall"]["questions"] == 3


class CountingEmbedder:
    name = "counting/3"
    dim = 3

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_queries(self, texts: list[str]) -> object:
        return self._rows(texts, 1.0)

    def embed_passages(self, texts: list[str]) -> object:
        return self._rows(texts, 2.0)

    def _rows(self, texts: list[str], side: float) -> object:
        import numpy as np

        self.seen += texts
        return np.array([[side, float(len(t)), 0.0] for t in texts], dtype=np.float32)


def test_the_embedding_cache_embeds_a_text_once_per_model_and_side(
    bench: ModuleType, tmp_path: Path
) -> None:
    inner = CountingEmbedder()
    cached = bench.CachedEmbedder(inner, tmp_path / "cache.sqlite")

    first = cached.embed_passages(["小狗", "собака"])
    again = bench.CachedEmbedder(inner, tmp_path / "cache.sqlite").embed_passages(["собака"])
    query = cached.embed_queries(["собака"])

    assert inner.seen == ["小狗", "собака", "собака"]  # the query side is its own entry
    assert again.tolist() == [first[1].tolist()]
    assert query[0][0] == 1.0


@pytest.mark.parametrize(
    "text",
    ["这不是 JSON", "[1, 2]", '[{"sample_id": "x"}]', '{"conversation": "Привет"}', "\ufeff"],
    ids=["not json", "not conversations", "no conversation", "an object", "empty"],
)
def test_a_file_not_in_locomo_format_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    from lore.cli import main

    path = tmp_path / "locomo.json"
    path.write_text(text, encoding="utf-8")
    assert main(["bench", "retrieval", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("lore: "), err
    assert "not a LoCoMo-format file" in err
