"""`lore chat`: the terminal chat, or one turn with `-m` for scripts."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common, add_session, load_runtime

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "chat",
        help="talk to Lore in the terminal",
        description="Talk to Lore. Without -m: an interactive chat (Enter sends, "
        "Alt+Enter inserts a new line, Ctrl+C cancels a reply, Ctrl+D exits).",
    )
    add_common(parser)
    add_session(parser)
    parser.add_argument(
        "-m",
        "--message",
        metavar="TEXT",
        help="send one message (or a /command), print the reply on stdout, and exit",
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="work in this folder: file tools and commands run there, and its AGENTS.md, "
        "SOUL.md and USER.md replace the workspace's",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from lore.channels.terminal import run_interactive, run_once
    from lore.tools.project import resolve_project

    if args.message is not None and not args.message.strip():
        from lore.errors import InvalidInputError

        raise InvalidInputError("the message is empty; nothing was sent")
    project = resolve_project(args.project) if args.project else None
    lore = load_runtime(args)

    async def main() -> int:
        try:
            if args.message is not None:
                return await run_once(
                    lore,
                    args.session,
                    args.message,
                    out=sys.stdout,
                    err=sys.stderr,
                    project=project,
                )
            if not sys.stdin.isatty():
                from lore.channels.piped import run_piped

                return await run_piped(
                    lore,
                    args.session,
                    sys.stdin.buffer,
                    out=sys.stdout,
                    err=sys.stderr,
                    project=project,
                )
            return await run_interactive(lore, args.session, project=project)
        finally:
            await lore.aclose()

    return asyncio.run(main())
