"""`lore dream`: fold recent history into the curated files now; or see and undo versions."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common, load_runtime

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dream",
        help="fold recent history into MEMORY.md, USER.md and SOUL.md",
        description="Run Dream now: it reads the history entries it has not seen and edits "
        "SOUL.md, USER.md and MEMORY.md (never AGENTS.md). Each run is a version in the "
        "workspace's own git history: --log shows one, --restore undoes one.",
    )
    add_common(parser)
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--log",
        nargs="?",
        const="",
        metavar="SHA",
        help="show the diff of the latest Dream (or of version SHA) instead of dreaming",
    )
    group.add_argument(
        "--restore",
        nargs="?",
        const="",
        metavar="SHA",
        help="list Dream versions, or undo version SHA as a new version",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from lore.memory.dream import run_dream
    from lore.memory.dream_history import dream_log, dream_restore, dream_versions

    lore = load_runtime(args)
    if args.log is not None:
        print(dream_log(lore.versions, args.log or None))
        return 0
    if args.restore is not None:
        lock = lore.exclusive("dream", lore.workspace.memory_dir / ".dream.lock")
        versions = lore.versions
        print(
            dream_restore(versions, lock, args.restore)
            if args.restore
            else dream_versions(versions)
        )
        return 0

    async def main() -> int:
        try:
            result = await run_dream(lore)
        finally:
            await lore.aclose()
        print(result.describe())
        return 1 if result.status == "failed" else 0

    return asyncio.run(main())
