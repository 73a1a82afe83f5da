"""The `lore` command. Each subcommand lives in its own module with `register(subparsers)`.

Only argparse is imported at start-up; a subcommand imports what it needs when it runs,
so `lore --help` stays fast. Any `LoreError` becomes one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from lore import __version__

__all__ = ["build_parser", "main"]

SUBCOMMANDS = (
    "chat",
    "memory",
    "remind",
    "sessions",
    "skills",
    "dream",
    "index",
    "serve",
    "bench",
    "config_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lore",
        description="Lore: a personal AI assistant with layered long-term memory.",
        epilog="Run `lore COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"lore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"lore.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from lore.errors import LoreError

    try:
        code: int = args.func(args)
        return code
    except LoreError as exc:
        print(f"lore: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
