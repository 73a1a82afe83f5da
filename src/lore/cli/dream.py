"""`lore dream`: fold recent history into the curated files now; or see and undo versions."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common, load_runtime, print_json

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from lore.ports.notes import Versions

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
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from lore.memory.dream import run_dream

    lore = load_runtime(args)
    if args.log is not None:
        return _log(lore.versions, args)
    if args.restore is not None:
        lock = lore.exclusive("dream", lore.workspace.memory_dir / ".dream.lock")
        return _restore(lore.versions, lock, args)

    async def main() -> int:
        try:
            result = await run_dream(lore)
        finally:
            await lore.aclose()
        if args.json:
            print_json(asdict(result))
        else:
            print(result.describe())
        return 1 if result.status == "failed" else 0

    return asyncio.run(main())


def _log(versions: Versions, args: argparse.Namespace) -> int:
    from lore.memory.dream_history import dream_diff, dream_log

    if args.json:
        sha, diff = dream_diff(versions, args.log or None)
        print_json({"sha": sha, "diff": diff})
    else:
        print(dream_log(versions, args.log or None))
    return 0


def _restore(
    versions: Versions, lock: AbstractContextManager[bool], args: argparse.Namespace
) -> int:
    from lore.memory.dream_history import dream_commits, dream_restore, dream_versions, undo_version

    if not args.json:
        print(
            dream_restore(versions, lock, args.restore)
            if args.restore
            else dream_versions(versions)
        )
    elif args.restore:
        reverted, version = undo_version(versions, lock, args.restore)
        print_json({"reverted": reverted, "version": version})
    else:
        print_json([asdict(commit) for commit in dream_commits(versions)])
    return 0
