"""`lore bench retrieval FILE`: the LoCoMo retrieval benchmark (bench/retrieval.py).

The benchmark code lives in the source tree's bench/ folder, beside the other
benchmarks; this command finds it there and runs it with the installed Lore.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from lore.cli.common import show_usage

__all__ = ["load_bench", "register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run a benchmark from the source tree",
        description="Benchmarks (see bench/ in the source tree).",
    )
    actions = parser.add_subparsers(dest="action", metavar="BENCHMARK")
    retrieval = actions.add_parser(
        "retrieval",
        help="LoCoMo evidence recall of memory_search vs plain BM25",
        description="Load every conversation of a LoCoMo-format file into a scratch Lore "
        "(archive, index, embeddings), ask each question of categories 1-4 through "
        "memory_search and print recall@5/10, any@k, all@k per category and p50/p95 "
        "latency beside an FTS5 BM25 baseline computed in the same run.",
    )
    retrieval.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    retrieval.add_argument("--json", action="store_true", help="print the figures as JSON")
    retrieval.add_argument(
        "--limit-conversations", type=int, metavar="N", help="only the first N conversations"
    )
    retrieval.add_argument("--home", type=Path, metavar="DIR", help="keep the scratch Lore here")
    retrieval.set_defaults(func=_retrieval)
    parser.set_defaults(func=lambda args: show_usage(parser))


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py of the source tree this Lore runs from."""
    from lore.errors import LoreError

    path = Path(__file__).resolve().parents[3] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"lore_bench_{name}", path)
    if not path.exists() or spec is None or spec.loader is None:
        raise LoreError(f"{path} not found: benchmarks ship with Lore's source tree")
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module


def _retrieval(args: argparse.Namespace) -> int:
    from lore.errors import LoreError

    if not args.file.exists():
        raise LoreError(f"no such file: {args.file}")
    bench = load_bench("retrieval")
    try:  # read it once up front: a wrong file is one line, not a traceback mid-run
        bench.load(args.file)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # JSON, UTF-8, shape
        problem = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise LoreError(f"{args.file} is not a LoCoMo-format file ({problem})") from None
    code: int = bench.run(args)
    return code
