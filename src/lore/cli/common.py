"""Options every subcommand shares, and how a subcommand gets its runtime."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lore.errors import InvalidInputError
from lore.keys import conversation_key

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = [
    "DEFAULT_SESSION",
    "add_common",
    "add_scoped",
    "add_session",
    "load_runtime",
    "print_json",
    "runtime",
    "session_key",
    "show_usage",
]


DEFAULT_SESSION = "cli:default"


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", metavar="DIR", help="Lore's data directory (env: LORE_HOME)")
    parser.add_argument(
        "--model", metavar="PROVIDER/MODEL", help="e.g. openai/gpt-4o-mini (env: LORE_MODEL)"
    )


def add_session(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session",
        "--scope",
        dest="session",
        default=DEFAULT_SESSION,
        type=session_key,
        metavar="KEY",
        help="conversation key (default: cli:default)",
    )


def session_key(text: str) -> str:
    """A conversation key from the command line, in any script; see `conversation_key`."""
    try:
        return conversation_key(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_scoped(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    """The options of a command that works on one conversation: common, --session, --json."""
    add_common(parser)
    add_session(parser)
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON")


def show_usage(parser: argparse.ArgumentParser) -> int:
    """A command group run without an action: its help, and a failing exit."""
    parser.print_help()
    return 1


def load_runtime(
    args: argparse.Namespace, *, console_log_level: int = logging.ERROR, **flags: Any
) -> Runtime:
    from lore.config import load_config
    from lore.logs import configure_logging
    from lore.runtime import build

    values = {"home": getattr(args, "home", None), "model": getattr(args, "model", None), **flags}
    config = load_config(flags=values)
    configure_logging(config.home, console_level=console_log_level, rotation=config.log)
    from lore.config_file import write_if_missing

    write_if_missing(config.config_path)  # first run: every setting, commented, to look at
    if isinstance(getattr(args, "session", None), str):
        # With one conversation for the owner across channels, the terminal's is it.
        args.session = config.conversation_scope(args.session)
    return build(config)


@contextmanager
def runtime(args: argparse.Namespace) -> Iterator[Runtime]:
    """The runtime for one command that needs no model, its database closed afterwards."""
    lore = load_runtime(args)
    try:
        yield lore
    finally:
        lore.close()


def print_json(data: Any) -> None:
    import json

    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def number_argument(value: object, what: str, listing: str) -> int:
    """A record's number as typed (`12` or `#12`); one line naming the command that lists
    them when it is not one."""
    from lore.errors import InvalidInputError, quoted

    text = str(value).strip().lstrip("#")
    if not text.isdecimal():
        raise InvalidInputError(f"{quoted(str(value))} is not a {what} number; see `{listing}`")
    return int(text)
