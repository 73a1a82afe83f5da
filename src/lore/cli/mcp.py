"""`lore mcp`: Lore's memory tools for an MCP client, over stdio."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common, load_runtime, session_key

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory tools to an MCP client over stdio",
        description="Speak MCP on stdin/stdout: remember, forget, search, list_memories, "
        "set_reminder, list_reminders, cancel_reminder, session_list and session_history, "
        "as the owner. Point a desktop client or an editor at `lore mcp`.",
    )
    add_common(parser)
    parser.add_argument(
        "--session",
        "--scope",
        dest="session",
        default="cli:default",
        type=session_key,
        metavar="KEY",
        help="the conversation a tool call without `scope` uses (default: cli:default)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from lore.channels.http.auth import Client
    from lore.channels.mcp import build_mcp_server

    lore = load_runtime(args)
    owner = Client("owner", ("*",), lore.config.user_name, default=args.session)
    server = build_mcp_server(lore, local=owner)

    async def main() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await lore.aclose()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0
