"""`lore mcp`: Lore's memory tools for an MCP client, over stdio; `lore mcp list`: the MCP
servers Lore is a client of, their state and tools."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common, load_runtime, print_json, session_key

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory tools to an MCP client over stdio; `list`: the MCP servers",
        description="Speak MCP on stdin/stdout: remember, forget, search, list_memories, "
        "set_reminder, list_reminders, cancel_reminder, session_list and session_history, "
        "as the owner. Point a desktop client or an editor at `lore mcp`. "
        "`lore mcp list` starts each server of [mcp.servers.NAME] in config.toml, shows "
        "its state (running, or failed and why) and its tools, and stops it again.",
    )
    # An optional word rather than subcommands: `lore mcp` alone keeps serving.
    parser.add_argument(
        "action", nargs="?", choices=("list",), help="list: the MCP servers Lore uses"
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
    parser.add_argument("--json", action="store_true", help="with list: print JSON")
    parser.add_argument(
        "--no-start", action="store_true", help="with list: show the servers without starting"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list(args)
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


def _list(args: argparse.Namespace) -> int:
    import asyncio

    from lore.tools.mcp_feature import McpTools

    lore = load_runtime(args)
    source = McpTools(lore.config)

    async def main() -> list[dict[str, Any]]:
        try:
            return await source.listing(start=not args.no_start)
        finally:
            await source.aclose()

    try:
        servers = asyncio.run(main())
    finally:
        lore.close()
    if args.json:
        print_json(servers)
        return 0
    if not servers:
        print("No MCP servers: add one as [mcp.servers.NAME] in config.toml.")
        return 0
    for server in servers:
        state = server["state"] + (f": {server['reason']}" if server["reason"] else "")
        print(f"{server['name']}  {state}  ({server['transport']}; trust {server['trust']})")
        width = max((len(t["name"]) for t in server["tools"]), default=0)
        for tool in server["tools"]:
            about = " ".join(tool["description"].split())
            about = about if len(about) <= 70 else about[:69] + "…"
            print(f"  {tool['name'].ljust(width)}  {tool['trust']:<5}  {about}")
    return 0
