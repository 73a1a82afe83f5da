"""`lore index rebuild|stats`: the search index over memories, notes and archived sessions."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common, print_json, runtime, show_usage

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "index",
        help="rebuild or inspect the search index",
        description="The search index (full text + local embeddings) behind memory_search "
        "and `lore memory search`. It follows every write on its own; rebuild it after "
        "restoring a backup or changing files while Lore was not running.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    rebuild = actions.add_parser(
        "rebuild",
        help="recreate the index from memories, notes and the session archive",
        description="Empty the index and fill it again from the memories table, "
        "MEMORY.md and memory/*.md, and every archived session; then embed it all "
        "in batches, with a progress bar and an estimate of the time left.",
    )
    rebuild.add_argument(
        "--no-vectors",
        action="store_true",
        help="index the text only; vectors are made later, in the background",
    )
    rebuild.add_argument(
        "--threads",
        type=_threads,
        metavar="N",
        help="embed on N threads (default: the count measured fastest while it runs)",
    )
    add_common(rebuild)
    rebuild.add_argument("--json", action="store_true", help="print the counts as JSON")
    rebuild.set_defaults(func=_rebuild)

    stats = actions.add_parser("stats", help="what the index holds")
    add_common(stats)
    stats.add_argument("--json", action="store_true", help="print as JSON")
    stats.set_defaults(func=_stats)
    parser.set_defaults(func=lambda args: show_usage(parser))


def _rebuild(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lore.search.rebuild import rebuild

    with runtime(args) as lore:
        report = rebuild(lore, vectors=not args.no_vectors, threads=args.threads)
    if args.json:
        print_json(asdict(report))
    else:
        print(
            f"Indexed {report.entries} entries: {report.memories} memories, "
            f"{report.note_files} note files, {report.sessions} archived sessions; "
            f"embedded {report.embedded} in {report.seconds:.1f}s."
        )
    return 0


def _threads(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= 256:
        raise argparse.ArgumentTypeError(
            f"--threads takes a whole number from 1 to 256, not {value!r}"
        )
    return count


def _stats(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lore.search import searcher

    with runtime(args) as lore:
        stats = searcher(lore).index.stats()
    if args.json:
        print_json(asdict(stats))
        return 0
    plural = {"memory": "memories:", "note": "note chunks:", "message": "messages:"}
    for kind, count in stats.entries.items():
        print(f"{plural.get(kind, kind + ':'):<18}{count}")
    print(f"{'scopes:':<18}{stats.scopes}")
    # Waiting: entries without a vector, and memories (an import) not even indexed yet.
    waiting = stats.pending_vectors + stats.queued_memories
    print(f"{'vectors:':<18}{stats.vectors} ({waiting} waiting)")
    if waiting:
        print(
            f"{'':<18}searched by words only until `lore serve` or `lore index rebuild` embeds them"
        )
    print(f"{'embedder:':<18}{stats.embedder or '(none yet)'}")
    return 0
