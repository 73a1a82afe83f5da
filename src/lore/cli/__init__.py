"""The `lore` command. Each subcommand lives in its own module with `register(subparsers)`.

Only argparse is imported at start-up; a subcommand imports what it needs when it runs,
so `lore --help` stays fast. Any `LoreError` becomes one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from lore import __version__
from lore.errors import LoreError

__all__ = ["build_parser", "main"]

SUBCOMMANDS = (
    "chat",
    "memory",
    "remind",
    "tasks",
    "sessions",
    "import_cmd",
    "skills",
    "dream",
    "index",
    "serve",
    "mcp",
    "bench",
    "config_cmd",
    "doctor",
    "forget",
    "backup",
    "migrate",
    "completion",
    "service",
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    arguments = list(sys.argv[1:] if argv is None else argv)
    for number, argument in enumerate(arguments, start=1):
        if _not_text(argument):
            print(
                f"lore: argument {number} is not valid UTF-8 text; check the terminal's "
                "encoding (nothing was changed)",
                file=sys.stderr,
            )
            return 1
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # a shell asking what may come next (lore completion)
        import argcomplete

        argcomplete.autocomplete(parser)
    args = parser.parse_args(arguments)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
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
    except OSError as exc:
        from lore.errors import DiskFullError
        from lore.files import disk_full

        if disk_full(exc):
            print(f"lore: {DiskFullError()}", file=sys.stderr)
            return 1
        # A home, file or directory the system refused: say which, in one line.
        where = f": {exc.filename}" if exc.filename else ""
        print(f"lore: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except Exception as exc:
        damage = _database_damage(exc)
        if damage is None:
            raise
        print(f"lore: {damage}", file=sys.stderr)
        return 1


def _not_text(argument: str) -> bool:
    """Bytes that were not UTF-8 reach argv as lone surrogates (surrogateescape)."""
    try:
        argument.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _database_damage(exc: Exception) -> LoreError | None:
    """A damaged `lore.db` surfaces wherever SQLite first reads the bad page: turn it into
    the one line that says so, here at the boundary, instead of a traceback."""
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is None or not isinstance(exc, sqlite3.DatabaseError):
        return None
    from lore.backends.local.database import damaged_database_error

    return damaged_database_error(exc)
