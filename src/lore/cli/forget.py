"""`lore forget --everywhere`: erase every copy of a memory (and the message it came
from) or of a phrase, everywhere under Lore's home. Shows what it found; `--yes` erases."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_scoped

__all__ = ["add_everywhere_flags", "forget_everywhere", "register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "forget",
        help="erase every copy of a memory or a phrase: transcripts, notes, git history, "
        "index, logs",
        description="Find every copy of a memory's text and of the message it came from "
        "(or of --phrase TEXT) under Lore's home: archived and live transcripts and their "
        "file names, the session index, summaries and daily notes, history.jsonl, the "
        "curated files and their git history, the search index and the log. Without "
        "--yes it only shows what it found.",
    )
    parser.add_argument("id", nargs="?", metavar="ID", help="a memory's number (e.g. 12 or #12)")
    parser.add_argument("--phrase", metavar="TEXT", help="erase this exact text instead")
    add_everywhere_flags(parser, required=True)
    add_scoped(parser, json_flag=True)
    parser.set_defaults(func=run)


def add_everywhere_flags(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    parser.add_argument(
        "--everywhere",
        action="store_true",
        help="also erase every copy under Lore's home"
        + (" (required: `lore memory forget` erases only the memory)" if required else ""),
    )
    parser.add_argument(
        "--yes", action="store_true", help="erase without asking (with --everywhere)"
    )


def run(args: argparse.Namespace) -> int:
    from lore.errors import InvalidInputError

    if not args.everywhere:
        raise InvalidInputError(
            "`lore forget` erases every copy of a text; say --everywhere to confirm "
            "(`lore memory forget ID` erases only the memory)"
        )
    if (args.id is None) == (args.phrase is None):
        raise InvalidInputError("give a memory ID or --phrase TEXT (one of them)")
    return forget_everywhere(args, args.id, args.phrase)


def forget_everywhere(args: argparse.Namespace, memory: str | None, phrase: str | None) -> int:
    """The dry run (or, with --yes, the erasure) for a memory id or a phrase."""
    from lore.cli.common import print_json, runtime
    from lore.errors import InvalidInputError
    from lore.memory.purge import purge_everywhere

    memory_id = None
    if memory is not None:
        text = memory.strip().lstrip("#")
        if not text.isdecimal():
            raise InvalidInputError(f"{memory!r} is not a memory number; see `lore memory list`")
        memory_id = int(text)
    with runtime(args) as lore:
        report = purge_everywhere(
            lore,
            args.session,
            memory_id=memory_id,
            phrase=phrase,
            erase=args.yes,
            by=lore.config.user_name,
            via="cli",
        )
    if args.json:
        print_json(report.to_dict())
    else:
        print("\n".join(report.lines("Run again with --yes to erase all of it.")))
    return 0
