"""`lore serve`: the gateway (OpenAI-compatible API, memory REST API, web page, MCP), the
chat channels (Telegram and LINE, when configured) and the background services (reminder
scheduler, idle close, Dream, embedding what the search index is still missing) in one process.
"""

from __future__ import annotations

import argparse
import logging
import socket
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common, load_runtime

if TYPE_CHECKING:
    import uvicorn

    from lore.channels.line import LineChannel
    from lore.channels.telegram import TelegramChannel
    from lore.reminders.scheduler import Deliver
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
    try:
        asyncio.run(serve(lore, once=args.once, listener=listener))
    except KeyboardInterrupt:
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
    lore: Runtime, *, once: bool = False, listener: socket.socket | None = None
) -> None:
    """Run the scheduler, idle close and Dream (and, given a listening socket, the
    gateway) until stopped; one pass with `once`."""
    import asyncio
    import signal
    import sys

    from lore.reminders.delivery import Delivery, session_delivery
    from lore.reminders.scheduler import Scheduler

    # Into the conversation's session, and to the channel serving its scope, if any.
    into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)

    async def deliver(due: Delivery) -> None:
        await into_session(due)
        stamp = lore.clock.now().astimezone(lore.zone).strftime("%Y-%m-%d %H:%M:%S %z")
        late = " (late)" if due.late else ""
        line = f"{stamp} delivered reminder #{due.id} to {due.scope}{late}: {due.text}"
        try:
            print(line, flush=True)
        except OSError as exc:
            # It is delivered: a failure now would only deliver it again. The line quotes
            # the reminder, which the log never does.
            log.warning("could not print the delivery of reminder #%d: %s", due.id, exc)

    from lore.channels.owner import terminal_delivers

    # A conversation a terminal is showing gets its reminders from that terminal.
    def accepts(scope: str) -> bool:
        return not lore.sessions.attached(scope) or not terminal_delivers(lore, scope)

    poll = lore.config.reminders.poll_seconds
    scheduler = Scheduler(
        lore.reminders,
        lore.clock,
        deliver,
        accepts=accepts,
        max_sleep=poll,
        lease_seconds=lore.config.reminders.lease_seconds,
        holder=lore.lease_holder,
    )
    try:
        # A service manager stops us with SIGTERM: finish the delivery in hand, then exit.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, scheduler.stop)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        pass
    from lore.memory.dream import dream_forever
    from lore.search import embed_backlog_forever
    from lore.sessions.closing import close_idle_sessions, idle_close_forever

    line = _line_channel(lore)
    try:
        if once:
            with ExitStack() as channels:
                if line is not None:  # due reminders of LINE chats go out by push
                    channels.enter_context(lore.bus.deliver_for("line", line.deliver))
                    if line.settings.owner_ids:
                        _owner_reminders(lore, channels, {"line": line.deliver})
                await scheduler.run_once()
            await close_idle_sessions(lore)
        else:
            # Idle close, Dream, the gateway and the chat channels run beside the scheduler
            # and end with it.
            helpers = [
                asyncio.create_task(idle_close_forever(lore), name="idle-close"),
                asyncio.create_task(dream_forever(lore), name="dream"),
                asyncio.create_task(embed_backlog_forever(lore), name="embed"),
            ]
            telegram = _telegram(lore)
            server = None if listener is None else _http_server(lore, listener, telegram, line)
            if server is not None and listener is not None:
                http = server.serve(sockets=[listener])
                web = asyncio.create_task(http, name="gateway")
                # The gateway stopping (Ctrl+C, SIGTERM, which it catches) stops the rest.
                web.add_done_callback(lambda _: scheduler.stop())
            print(
                "lore serve: reminders, idle-session close, Dream and search embedding running; "
                "Ctrl+C stops",
                file=sys.stderr,
            )
            with ExitStack() as channels:
                pushers: dict[str, Deliver] = {}  # channels that reach the owner 1:1
                if telegram is not None:
                    channels.enter_context(lore.bus.deliver_for("telegram", telegram.deliver))
                    helpers.append(asyncio.create_task(telegram.run_forever(), name="telegram"))
                    how = telegram.settings.webhook_url or "long polling"
                    print(f"lore serve: Telegram connected ({how})", file=sys.stderr)
                    if telegram.settings.owner_ids:
                        pushers["telegram"] = telegram.deliver
                if line is not None:
                    channels.enter_context(lore.bus.deliver_for("line", line.deliver))
                    # Events a stopped `lore serve` took but never answered are answered now.
                    helpers.append(asyncio.create_task(line.run_forever(), name="line"))
                    if line.settings.owner_ids:
                        pushers["line"] = line.deliver
                    print(
                        "lore serve: LINE webhook at /line/webhook (LINE must reach it over "
                        "HTTPS: https://<your host>/line/webhook)",
                        file=sys.stderr,
                    )
                _owner_reminders(lore, channels, pushers)
                try:
                    await scheduler.run_forever()
                finally:
                    if server is not None:
                        # Let replies in flight finish and the app shut down in order.
                        server.should_exit = True
                        await asyncio.gather(web, return_exceptions=True)
                    for task in helpers:
                        task.cancel()
                    await asyncio.gather(*helpers, return_exceptions=True)
    finally:
        if line is not None:
            await line.aclose()
        await lore.aclose()


def _owner_reminders(lore: Runtime, channels: ExitStack, pushers: dict[str, Deliver]) -> None:
    """With one conversation for the owner, its reminders go out through `pushers`
    (the channels that reach the owner 1:1, by name)."""
    if not lore.config.channels.unified_owner_session:
        return
    from lore.channels.owner import owner_reminders
    from lore.config import OWNER_SCOPE

    owner = owner_reminders(lore, pushers)
    channels.enter_context(lore.bus.deliver_to(OWNER_SCOPE, owner))


def _telegram(lore: Runtime) -> TelegramChannel | None:
    """The Telegram channel, when a bot token is configured."""
    if not lore.config.telegram.token:
        return None
    from lore.channels.telegram import TelegramChannel

    telegram = TelegramChannel(lore, lore.config.telegram)
    telegram.check_installed()
    return telegram


def _line_channel(lore: Runtime) -> LineChannel | None:
    """The LINE channel when its secret and token are set."""
    if not lore.config.line.enabled:
        return None
    from lore.channels.line import LineChannel

    line = LineChannel(lore, lore.config.line)
    line.check_installed()
    return line


def _http_server(
    lore: Runtime,
    listener: socket.socket,
    telegram: TelegramChannel | None = None,
    line: LineChannel | None = None,
) -> uvicorn.Server:
    """The gateway's uvicorn server for `listener` (with the LINE webhook, and Telegram's
    when Telegram is set up that way), not started yet."""
    import sys

    from lore.channels.http import create_app
    from lore.channels.http.auth import Clients, ensure_token
    from lore.channels.http.server import GatewayServer, server_config

    token = ensure_token(lore.config)
    host, port = lore.config.api.host, listener.getsockname()[1]
    app = create_app(lore, clients=Clients(token, lore.config), host=host, line=line)
    if telegram is not None and telegram.settings.webhook_url:
        from lore.channels.telegram_webhook import mount_telegram_webhook

        mount_telegram_webhook(app, telegram)
    config = server_config(app, lore.config.api)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"lore serve: http://{shown}:{port}/ (web page), /v1 (OpenAI-compatible), /api, "
        "/mcp, /docs; token: lore serve --show-token",
        file=sys.stderr,
    )
    # Stopping refuses any tool still waiting for the page's Approve / Deny.
    return GatewayServer(config, app.state.gateway.approvals)
