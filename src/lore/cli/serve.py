"""`lore serve`: for now, the reminder scheduler with a log line per delivery.

Later issues add the HTTP API, the web page and the chat channels to this command.
"""

from __future__ import annotations

import argparse
import logging
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common, load_runtime

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the reminder scheduler (Ctrl+C stops)",
        description="Run Lore's background services: the reminder scheduler, which delivers "
        "due reminders into their conversations and logs one line per delivery.",
    )
    add_common(parser)
    parser.add_argument("--once", action="store_true", help="deliver what is due now, then exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    lore = load_runtime(args, console_log_level=logging.INFO)
    try:
        asyncio.run(serve(lore, once=args.once))
    except KeyboardInterrupt:
        print("lore serve: stopped", file=sys.stderr)
    return 0


async def serve(lore: Runtime, *, once: bool = False) -> None:
    """Run the scheduler, idle close and Dream until stopped (one pass with `once`)."""
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

    # A conversation a terminal is showing gets its reminders from that terminal.
    def accepts(scope: str) -> bool:
        return not lore.sessions.attached(scope)

    poll = lore.config.reminders.poll_seconds
    scheduler = Scheduler(lore.reminders, lore.clock, deliver, accepts=accepts, max_sleep=poll)
    try:
        # A service manager stops us with SIGTERM: finish the delivery in hand, then exit.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, scheduler.stop)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        pass
    from lore.memory.dream import dream_forever
    from lore.sessions.closing import close_idle_sessions, idle_close_forever

    try:
        if once:
            await scheduler.run_once()
            await close_idle_sessions(lore)
        else:
            print(
                "lore serve: reminders, idle-session close and Dream running; Ctrl+C stops",
                file=sys.stderr,
            )
            # Idle close, Dream and the chat channels run beside the scheduler and end with it.
            helpers = [
                asyncio.create_task(idle_close_forever(lore), name="idle-close"),
                asyncio.create_task(dream_forever(lore), name="dream"),
            ]
            with ExitStack() as channels:
                if lore.config.telegram.token:
                    from lore.channels.telegram import TelegramChannel

                    telegram = TelegramChannel(lore, lore.config.telegram)
                    telegram.check_installed()
                    channels.enter_context(lore.bus.deliver_for("telegram:", telegram.deliver))
                    helpers.append(asyncio.create_task(telegram.run_forever(), name="telegram"))
                    print("lore serve: Telegram connected (long polling)", file=sys.stderr)
                try:
                    await scheduler.run_forever()
                finally:
                    for task in helpers:
                        task.cancel()
                    await asyncio.gather(*helpers, return_exceptions=True)
    finally:
        await lore.aclose()
