"""`lore serve`: the gateway (OpenAI-compatible API, memory REST API, web page, MCP), the
chat channels (Telegram and LINE, when configured) and the background services (reminder
scheduler, idle close, Dream, embedding what the search index is still missing) in one process.
"""

from __future__ import annotations

import argparse
import logging
import socket
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common, load_runtime

if TYPE_CHECKING:
    from collections.abc import Callable

    from lore.config import Config
    from lore.runtime import Runtime

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTP API, web page, MCP and reminder scheduler (Ctrl+C stops)",
        description="Run Lore's gateway on 127.0.0.1:8765 (an OpenAI-compatible chat API, "
        "the memory REST API with docs at /docs, the web page at /, MCP at /mcp) and its "
        "background services: the reminder scheduler, which delivers due reminders into "
        "their conversations and logs one line per delivery, idle-session close, Dream, and "
        "embedding search entries still waiting for a vector. "
        "Every request but /health needs the token (see --show-token).",
    )
    add_common(parser)
    parser.add_argument("--host", metavar="ADDRESS", help="listen here (default 127.0.0.1)")
    parser.add_argument("--port", type=int, metavar="N", help="listen on this port (default 8765)")
    parser.add_argument(
        "--show-token",
        action="store_true",
        help="print the owner's API token (creating it if there is none) and exit",
    )
    parser.add_argument(
        "--once", action="store_true", help="deliver what is due now, then exit (no HTTP)"
    )
    parser.add_argument(
        "--logout-all",
        action="store_true",
        help="end every log-in to the web page (a running server included) and exit",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from lore.channels.http.auth import ensure_token
    from lore.config import load_config

    flags = {"api.host": args.host, "api.port": args.port}
    lore = load_runtime(args, console_log_level=logging.INFO, **flags)
    if args.show_token:
        print(ensure_token(lore.config))
        return 0
    if args.logout_all:
        from lore.channels.http.logins import log_out_everyone
        from lore.text import counted

        ended = log_out_everyone(lore.config.web_logins_path)
        print(f"lore serve: logged out {counted(ended, 'web page log-in')}")
        return 0
    listener = None if args.once else _listen(lore)

    def settings() -> Config:  # SIGHUP: config.toml again, under the same flags
        return load_config(flags={"home": args.home, "model": args.model, **flags})

    try:
        asyncio.run(serve(lore, once=args.once, listener=listener, settings=settings))
    except KeyboardInterrupt:
        print("lore serve: stopped", file=sys.stderr)
        return 0
    if not args.once:  # stopped by SIGTERM (a service manager) or the gateway ending
        print("lore serve: stopped", file=sys.stderr)
    return 0


def _listen(lore: Runtime) -> socket.socket:
    """The listening socket, opened before anything starts so a bad address is one line."""
    from lore.channels.http.auth import is_loopback, read_token
    from lore.errors import ConfigError

    host, port = lore.config.api.host, lore.config.api.port
    if not is_loopback(host) and not read_token(lore.config):
        raise ConfigError(
            f"refusing to listen on {host} before a token exists: run "
            "`lore serve --show-token` first (every request will need it)"
        )
    if not 0 < port < 65536:
        raise ConfigError(f"port {port} is not a TCP port (1-65535)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


async def serve(
    lore: Runtime,
    *,
    once: bool = False,
    listener: socket.socket | None = None,
    settings: Callable[[], Config] | None = None,
) -> None:
    """Run the scheduler, idle close and Dream (and, given a listening socket, the
    gateway) until stopped; one pass with `once`. `settings` is what SIGHUP reloads."""
    from lore.daemon import Daemon

    daemon = Daemon(lore, listener=listener, settings=settings)
    await (daemon.run_once() if once else daemon.run())
