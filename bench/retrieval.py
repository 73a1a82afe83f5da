"""LoCoMo evidence retrieval: Lore's memory_search against plain FTS5 BM25, in one run.

    python bench/retrieval.py ../shared/data/locomo/locomo-dev.json [--ablate] [--json]
                              [--postgres | --database-url URL]
    lore bench retrieval FILE

Takes any file in LoCoMo's format (a JSON list of conversations with `conversation` and
`qa`). Each conversation goes into a fresh Lore home through Lore's own code: every
session is archived by `SessionArchive` with its date, one scope per conversation, then
indexed and embedded by `lore.search`. Every question of categories 1-4 that has evidence
is asked through the memory_search tool (`MemorySearchTool.search`); a result counts when
it is a turn of that conversation. The baseline is what the data's README describes:
each turn "speaker: text" in an FTS5 table (unicode61), the question lowercased, stop
words removed, terms OR-ed, ranked by bm25. Generated side data (observation,
session_summary, event_summary) is never read.

Beside the figures: recall on the conversations the settings were chosen on and on the
held-out rest (`TUNED_ON`), the cost of recall (characters and tokens the tool's answer
adds to the prompt), and with `--ablate` the same questions with each stage of the search
switched off (or on) alone, on the same index. Vectors are cached in a file under the
temporary directory (`--cache`, keyed by model, side and a hash of the text; `--no-cache`
embeds afresh), so a second run or an ablation embeds nothing it embedded before; the
cache changes no figure, only the build time.

With `--database-url URL` (an empty database; Lore creates its tables) or `--postgres`
(the embedded PostgreSQL of the tests), the same questions are also asked of a second
Lore home whose memories and search index live in PostgreSQL, in the same run, and both
figures are printed one above the other.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
DEFAULT_FILE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo"

# NLTK's English stop words: the baseline's "stop words removed".
STOP_WORDS = frozenset(
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself "
    "yourselves he him his himself she she's her hers herself it it's its itself they them "
    "their theirs themselves what which who whom this that that'll these those am is are was "
    "were be been being have has had having do does did doing a an the and but if or because "
    "as until while of at by for with about against between into through during before after "
    "above below to from up down in out on off over under again further then once here there "
    "when where why how all any both each few more most other some such no nor not only own "
    "same so than too very s t can will just don don't should should've now d ll m o re ve y "
    "ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven "
    "haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn "
    "shouldn't wasn wasn't weren weren't won won't wouldn wouldn't".split()
)


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass
class Session:
    number: int
    date: datetime
    turns: list[Turn]


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]
    conversation: str = ""


@dataclass
class Conversation:
    sample_id: str
    sessions: list[Session]
    questions: list[Question]

    @property
    def turn_ids(self) -> set[str]:
        return {t.dia_id for s in self.sessions for t in s.turns}


@dataclass
class Ranking:
    """One question's answer from one system: dia_ids best first, and the time it took."""

    question: Question
    ranked: list[str]
    seconds: float
    shown_chars: int = 0  # what the tool's answer (default limit) puts in the prompt
    shown_tokens: int = 0


@dataclass
class Report:
    file: str
    conversations: int
    systems: dict[str, list[Ranking]] = field(default_factory=dict)
    ablations: dict[str, list[Ranking]] = field(default_factory=dict)
    tuned_on: tuple[str, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)


# -- reading the format -------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" (read as UTC)."""
    cleaned = " ".join(text.replace(",", " ").split())
    for pattern in ("%I:%M %p on %d %B %Y", "%I:%M %p on %B %d %Y", "%Y-%m-%d %H:%M"):
        try:
            return datetime.strptime(cleaned, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unrecognised session date {text!r}")


def normalise_evidence(raw: Iterable[Any], known: set[str]) -> list[str]:
    """Evidence ids cleaned ("D8:6; D9:17" -> two ids, "D:11:26" -> "D11:26"), unknown dropped."""
    found: list[str] = []
    for item in raw:
        for session, turn in re.findall(r"D:?\s*(\d+)\s*:\s*(\d+)", str(item)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known and dia_id not in found:
                found.append(dia_id)
    return found


def load(path: Path) -> list[Conversation]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of conversations")
    conversations = []
    for item in data:
        conv = item["conversation"]
        sessions = []
        numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
        for number in numbers:
            turns = [
                Turn(str(t["dia_id"]), str(t["speaker"]), str(t.get("text", "")))
                for t in conv[f"session_{number}"] or []
            ]
            date = parse_date(conv[f"session_{number}_date_time"])
            sessions.append(Session(number, date, turns))
        known = {t.dia_id for s in sessions for t in s.turns}
        questions = []
        for qa in item.get("qa", []):
            category = int(qa.get("category", 0))
            evidence = normalise_evidence(qa.get("evidence") or [], known)
            if category in CATEGORIES and evidence:
                questions.append(
                    Question(str(qa["question"]), category, evidence, str(item["sample_id"]))
                )
        conversations.append(Conversation(str(item["sample_id"]), sessions, questions))
    return conversations


# -- the embedding cache -------------------------------------------------------------------

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "lore-bench-embeddings.sqlite"


class CachedEmbedder:
    """The real model behind a file cache keyed by model name, side and text hash: a second
    run (or an ablation) embeds nothing it embedded before. Only this benchmark uses it."""

    def __init__(self, inner: Any, path: Path) -> None:
        self._inner = inner
        self.name: str = inner.name
        self.dim: int = inner.dim
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, row BLOB)")
        self.hits = 0
        self.misses = 0

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, "passage")

    def _embed(self, texts: Sequence[str], side: str) -> Any:
        import numpy as np

        keys = [hashlib.sha256(f"{self.name}\0{side}\0{t}".encode()).hexdigest() for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT key, row FROM vectors WHERE key IN ({marks})", chunk)
            found.update(rows.fetchall())
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            embed = self._inner.embed_queries if side == "query" else self._inner.embed_passages
            fresh = embed([texts[i] for i in missing])
            new = [(keys[i], fresh[n].astype(np.float32).tobytes()) for n, i in enumerate(missing)]
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", new)
            self._db.commit()
            found.update(new)
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        matrix = np.zeros((len(keys), self.dim), dtype=np.float32)
        for n, key in enumerate(keys):
            matrix[n] = np.frombuffer(found[key], dtype=np.float32)
        return matrix


# -- Lore ---------------------------------------------------------------------------------


@dataclass
class Built:
    """A Lore home holding every conversation, indexed and embedded."""

    lore: Any
    dia_of: dict[tuple[str, int], str]
    seconds: float


def build_lore(
    conversations: Sequence[Conversation],
    home: Path,
    *,
    embedder: Any = None,
    progress: bool = True,
    database_url: str = "",
) -> Built:
    """Archive every session of every conversation in a Lore home (its index in
    PostgreSQL when `database_url` names one), index and embed them."""
    from lore.clock import FixedClock
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.messages import Message
    from lore.ports.sessions import ClosingArchive, SessionMeta
    from lore.runtime import build
    from lore.search import searcher
    from lore.search.rebuild import Progress

    env = {"LORE_HOME": str(home), "LORE_DATABASE_URL": database_url}
    config = load_config(env=env, flags={"model": "scripted"})
    # The index embeds with `embedder` (the cached model) when one is given.
    clock = FixedClock(datetime.now(UTC))
    lore = build(config, provider=ScriptedProvider(), clock=clock, embedder=embedder)
    # The runtime's own archive: files, or PostgreSQL's tables when the sessions live there.
    archive = cast(ClosingArchive, lore.sessions.archive)
    dia_of: dict[tuple[str, int], str] = {}
    started = time.perf_counter()
    for conv in conversations:
        scope = f"locomo:{conv.sample_id}"
        for session in conv.sessions:
            session_id = hashlib.sha1(f"{conv.sample_id}/{session.number}".encode()).hexdigest()
            stamp = session.date.isoformat()
            messages: list[Message] = [
                {"role": "user", "author": t.speaker, "content": t.text, "timestamp": stamp}
                for t in session.turns
            ]
            for position, turn in enumerate(session.turns):
                dia_of[(session_id, position)] = turn.dia_id
            meta = SessionMeta(session_id, scope, stamp, stamp)
            entry = archive.write_transcript(
                meta,
                messages,
                ended_at=session.date + timedelta(minutes=30),
                zone=UTC,
                slug=f"session-{session.number}",
                reason="new",
                fault=None,
            )
            archive.append_index(entry)
    search = searcher(lore)
    search.refresh(files=True)
    index = search.index
    bar = Progress(index.pending_vectors(), "embedding", stream=None if progress else io.StringIO())
    index.embed_pending(batch=32, progress=bar.advance)
    bar.close()
    return Built(lore, dia_of, time.perf_counter() - started)


def ask_lore(
    built: Built,
    conversations: Sequence[Conversation],
    *,
    fusion: Any = None,
    label: str = "lore",
    progress: bool = True,
) -> list[Ranking]:
    """Every question through the memory_search tool (or, for an ablation, the same search
    with other settings)."""
    from lore.core.tools import ToolContext
    from lore.llm.tokens import estimate_tokens
    from lore.search import format_hits, searcher
    from lore.search.rebuild import Progress
    from lore.search.tool import DEFAULT_LIMIT, MemorySearchTool

    tool = MemorySearchTool(built.lore)
    search = searcher(built.lore)
    rankings: list[Ranking] = []
    total = sum(len(c.questions) for c in conversations)
    bar = Progress(total, f"{label:<9}", stream=None if progress else io.StringIO())
    for conv in conversations:
        last = max(s.date for s in conv.sessions) + timedelta(days=1)
        ctx = ToolContext(f"locomo:{conv.sample_id}", "bench", "bench", 0, last, "UTC")
        for question in conv.questions:
            began = time.perf_counter()
            if fusion is None:
                hits = tool.search(question.text, ctx, limit=max(KS))
            else:
                hits = search.search(
                    question.text, ctx.scope, limit=max(KS), now=ctx.now, fusion=fusion
                )
            seconds = time.perf_counter() - began
            ranked = [
                built.dia_of[(h.entry.source, h.entry.locator)]
                for h in hits
                if h.entry.kind == "message" and (h.entry.source, h.entry.locator) in built.dia_of
            ]
            # The cost of recall: what the tool's answer at its default limit adds to the
            # prompt (the LoCoMo homes hold no memories, so the memory block adds nothing).
            shown = format_hits(hits[:DEFAULT_LIMIT], question.text, UTC)
            rankings.append(Ranking(question, ranked, seconds, len(shown), estimate_tokens(shown)))
            bar.advance()
    bar.close()
    return rankings


# Each stage switched off (or on) alone, on the same index: what it buys.
def ablations() -> dict[str, Any]:
    from dataclasses import replace

    from lore.search.hybrid import DEFAULT_FUSION as d

    return {
        "without window": replace(d, window=0, window_weight=0.0),
        "without rerank": replace(d, rerank=False),
        "speaker x1.15": replace(d, speaker_bonus=0.15),
        "no term coverage": replace(d, coverage_bonus=0.0),
        "no session lift": replace(d, session_weight=0.0),
        "text weight 1": replace(d, text_weight=1.0),
        "no neighbours": replace(d, neighbour_share=0.0, previous_share=0.0),
        "pool 100": replace(d, candidates=100),
        "+ session decay": replace(d, session_decay=0.8),
        "+ feedback": replace(d, feedback=5),
        "earlier search": replace(d, speaker_bonus=0.15, session_weight=0.0),
    }


def run_lore(
    conversations: Sequence[Conversation],
    home: Path,
    *,
    progress: bool = True,
    embedder: Any = None,
    ablate: bool = False,
    database_url: str = "",
) -> tuple[list[Ranking], dict[str, list[Ranking]], dict[str, Any]]:
    """Archive, index and embed every conversation in a Lore home; ask every question
    (and, with `ablate`, again under each ablation's settings)."""
    import asyncio

    from lore.search import searcher

    built = build_lore(
        conversations, home, embedder=embedder, progress=progress, database_url=database_url
    )
    rankings = ask_lore(built, conversations, progress=progress)
    others = {
        name: ask_lore(built, conversations, fusion=fusion, label=name[:9], progress=progress)
        for name, fusion in (ablations().items() if ablate else ())
    }
    stats = searcher(built.lore).index.stats()
    asyncio.run(built.lore.aclose())
    notes = {
        "embedder": stats.embedder,
        "entries": sum(stats.entries.values()),
        "build_seconds": round(built.seconds, 1),
    }
    if isinstance(embedder, CachedEmbedder):
        notes["embedding cache"] = f"{embedder.hits} hits, {embedder.misses} embedded"
    return rankings, others, notes


# -- the BM25 baseline --------------------------------------------------------------------


def bm25_query(question: str) -> str | None:
    terms = [w for w in re.findall(r"[^\W_]+", question.lower()) if w not in STOP_WORDS]
    unique = list(dict.fromkeys(terms))
    return " OR ".join(f'"{t}"' for t in unique) if unique else None


def run_bm25(conversations: Sequence[Conversation]) -> list[Ranking]:
    rankings: list[Ranking] = []
    for conv in conversations:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE turns USING fts5 (dia_id UNINDEXED, body)")
        db.executemany(
            "INSERT INTO turns (dia_id, body) VALUES (?, ?)",
            [(t.dia_id, f"{t.speaker}: {t.text}") for s in conv.sessions for t in s.turns],
        )
        for question in conv.questions:
            began = time.perf_counter()
            match = bm25_query(question.text)
            rows = (
                db.execute(
                    "SELECT dia_id FROM turns WHERE turns MATCH ? ORDER BY rank LIMIT ?",
                    (match, max(KS)),
                ).fetchall()
                if match
                else []
            )
            rankings.append(Ranking(question, [r[0] for r in rows], time.perf_counter() - began))
        db.close()
    return rankings


# -- the metric -----------------------------------------------------------------------------


def scores(rankings: Sequence[Ranking]) -> dict[str, float]:
    """recall@k, any@k, all@k averaged over questions; p50/p95 latency in ms."""
    out: dict[str, float] = {"questions": float(len(rankings))}
    if not rankings:
        return out
    for k in KS:
        found = [len(set(r.ranked[:k]) & set(r.question.evidence)) for r in rankings]
        wanted = [len(r.question.evidence) for r in rankings]
        out[f"recall@{k}"] = statistics.fmean(f / w for f, w in zip(found, wanted, strict=True))
        out[f"any@{k}"] = statistics.fmean(f > 0 for f in found)
        out[f"all@{k}"] = statistics.fmean(f == w for f, w in zip(found, wanted, strict=True))
    out["prompt_chars"] = statistics.fmean(r.shown_chars for r in rankings)
    out["prompt_tokens"] = statistics.fmean(r.shown_tokens for r in rankings)
    times = sorted(r.seconds * 1000 for r in rankings)
    out["p50_ms"] = times[len(times) // 2]
    out["p95_ms"] = times[min(len(times) - 1, int(len(times) * 0.95))]
    return out


def table(rankings: Sequence[Ranking]) -> dict[str, dict[str, float]]:
    rows = {
        f"{c} {name}": scores([r for r in rankings if r.question.category == c])
        for c, name in CATEGORIES.items()
    }
    rows["overall"] = scores(rankings)
    return rows


def render(report: Report) -> str:
    columns = [f"{m}@{k}" for m in ("recall", "any", "all") for k in KS]
    lines = [
        f"LoCoMo retrieval · {report.file} · {report.conversations} conversation(s)"
        f" · categories 1-4",
        "",
    ]
    header = f"{'':16}{'n':>6}" + "".join(f"{c:>10}" for c in columns)
    tables = {name: table(r) for name, r in report.systems.items()}
    for name, rows in tables.items():
        lines += [name, header]
        for label, row in rows.items():
            cells = "".join(f"{row.get(c, 0.0):>10.3f}" for c in columns)
            lines.append(f"  {label:<14}{int(row['questions']):>6}{cells}")
        lines.append("")
    lines.append(f"{'latency':16}{'p50 ms':>10}{'p95 ms':>10}")
    for name, rows in tables.items():
        overall = rows["overall"]
        lines.append(
            f"  {name:<14}{overall.get('p50_ms', 0):>10.2f}{overall.get('p95_ms', 0):>10.2f}"
        )
    lore = report.systems.get("Lore hybrid", [])
    if lore:
        cost = scores(lore)
        lines += [
            "",
            f"cost of recall: {cost['prompt_chars']:.0f} chars ≈ {cost['prompt_tokens']:.0f}"
            f" tokens of search results per call (default limit) for recall@10"
            f" {cost['recall@10']:.3f}",
        ]
    if report.tuned_on:
        lines += ["", "split (settings chosen on 'tuned', never on 'held-out')", header]
        for label, keep in (("tuned", True), ("held-out", False)):
            for name, rankings in report.systems.items():
                part = [r for r in rankings if (r.question.conversation in report.tuned_on) == keep]
                row = scores(part)
                cells = "".join(f"{row.get(c, 0.0):>10.3f}" for c in columns)
                lines.append(f"  {label + ' ' + name[:5]:<14}{int(row['questions']):>6}{cells}")
    if report.ablations:
        lines += ["", _ablation_table(report)]
    if report.notes:
        lines += ["", " · ".join(f"{k}: {v}" for k, v in report.notes.items())]
    return "\n".join(lines)


def _ablation_table(report: Report) -> str:
    """recall@5/@10 overall, per category and held-out, for each stage changed alone."""
    names = [f"{c}" for c in CATEGORIES.values()]
    lines = [
        "ablation (recall@10 unless marked)",
        f"{'':18}{'R@5':>7}{'R@10':>7}"
        + "".join(f"{n[:9]:>10}" for n in names)
        + f"{'held R@10':>11}{'p50 ms':>8}",
    ]
    systems = {"Lore hybrid": report.systems["Lore hybrid"], **report.ablations}
    for name, rankings in systems.items():
        overall = scores(rankings)
        per = [scores([r for r in rankings if r.question.category == c]) for c in CATEGORIES]
        held = scores([r for r in rankings if r.question.conversation not in report.tuned_on])
        lines.append(
            f"  {name:<16}{overall['recall@5']:>7.3f}{overall['recall@10']:>7.3f}"
            + "".join(f"{p.get('recall@10', 0.0):>10.3f}" for p in per)
            + f"{held.get('recall@10', 0.0):>11.3f}{overall['p50_ms']:>8.1f}"
        )
    return "\n".join(lines)


def as_json(report: Report) -> dict[str, Any]:
    return {
        "file": report.file,
        "conversations": report.conversations,
        "systems": {name: table(r) for name, r in report.systems.items()},
        "ablations": {name: table(r) for name, r in report.ablations.items()},
        "tuned_on": list(report.tuned_on),
        "notes": report.notes,
    }


# -- running --------------------------------------------------------------------------------

# The conversations the settings were chosen on; the rest of any file is held out.
TUNED_ON = ("conv-26", "conv-30", "conv-41")


def benchmark(
    path: Path,
    *,
    limit_conversations: int | None = None,
    home: Path | None = None,
    progress: bool = True,
    ablate: bool = False,
    cache: Path | None = None,
    database_url: str = "",
) -> Report:
    conversations = load(path)[:limit_conversations]
    report = Report(path.name, len(conversations))
    embedder = None
    if cache is not None:
        from lore.embed import default_embedder

        embedder = CachedEmbedder(default_embedder(), cache)
    with tempfile.TemporaryDirectory(prefix="lore-locomo-") as scratch:
        lore_rankings, others, notes = run_lore(
            conversations, home or Path(scratch), progress=progress, embedder=embedder,
            ablate=ablate,
        )  # fmt: skip
    report.systems["Lore hybrid"] = lore_rankings
    if database_url:
        with tempfile.TemporaryDirectory(prefix="lore-locomo-pg-") as scratch:
            pg_rankings, _, pg_notes = run_lore(
                conversations, Path(scratch), progress=progress, embedder=embedder,
                database_url=database_url,
            )  # fmt: skip
        report.systems["PostgreSQL hybrid"] = pg_rankings
        notes["PostgreSQL entries"] = pg_notes["entries"]
        notes["PostgreSQL build_seconds"] = pg_notes["build_seconds"]
    report.systems["BM25 (FTS5)"] = run_bm25(conversations)
    report.ablations = others
    present = {c.sample_id for c in conversations}
    if present & set(TUNED_ON) and present - set(TUNED_ON):
        report.tuned_on = TUNED_ON
    report.notes = notes
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, nargs="?", help="a LoCoMo-format JSON file")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--limit-conversations", type=int, metavar="N", help="only the first N conversations"
    )
    parser.add_argument("--home", type=Path, metavar="DIR", help="keep the Lore home here")
    parser.add_argument(
        "--ablate", action="store_true", help="also run each stage switched off (or on) alone"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="FILE",
        help=f"embedding cache, keyed by model and text (default {DEFAULT_CACHE})",
    )
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--database-url",
        default="",
        metavar="URL",
        help="also run with the stores in this PostgreSQL database (empty; Lore migrates it)",
    )
    where.add_argument(
        "--postgres",
        action="store_true",
        help="also run with the stores in a throwaway embedded PostgreSQL (the tests' server)",
    )


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    path = args.file or DEFAULT_FILE / "locomo-dev.json"
    if not path.exists():
        print(f"no LoCoMo file at {path}; skipping", file=sys.stderr)
        return 0 if args.file is None else 1
    cache = None if getattr(args, "no_cache", True) else getattr(args, "cache", None)
    with ExitStack() as stack:
        database_url = getattr(args, "database_url", "")
        if getattr(args, "postgres", False):
            database_url = stack.enter_context(_embedded_postgres())
        report = benchmark(
            path,
            limit_conversations=args.limit_conversations,
            home=args.home,
            progress=not args.json,
            ablate=getattr(args, "ablate", False),
            cache=cache,
            database_url=database_url,
        )
    out(json.dumps(as_json(report), indent=2) if args.json else render(report))
    return 0


@contextmanager
def _embedded_postgres() -> Iterator[str]:
    """An empty database on a throwaway embedded PostgreSQL (the tests' server)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.postgres_server import EmbeddedPostgres

    server = EmbeddedPostgres().start()
    try:
        yield server.create_database()
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
