"""`lore serve`'s process as one object: the reminder scheduler, idle close, Dream, search
embedding, the chat channels (every one whose token is set: `lore.channels.plugin`)
and the gateway, started together and
stopped in order: the gateway first (replies in flight finish, waiting approvals are
refused), then the background work and the channels, the runtime last.

A due reminder takes one route, set up here: into its conversation's session (once),
then out through the channel that serves its scope (a chat channel by push; the owner's
one conversation through the 1:1 channel they chose or last wrote on), else to a page or
terminal showing the conversation; and one line on the console. A conversation a
terminal is showing gets its reminders from that terminal instead.

As a service manager drives it: SIGTERM stops it in that order (replies the gateway is
streaming finish; a chat channel's turn cut short keeps the text shown so far), SIGHUP
reads `config.toml` again and applies what is safe to change while running.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Callable, Coroutine, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from lore.backends.local.scheduled_backups import backup_forever
from lore.channels.owner import owner_reminders, terminal_delivers
from lore.channels.plugin import Channel, open_channels
from lore.config import OWNER_SCOPE
from lore.config_reload import reload_settings
from lore.errors import LoreError
from lore.events import Inbound, ReplyFailed
from lore.health import HEALTH
from lore.logs import resize_log
from lore.memory.dream import dream_forever
from lore.metrics import METRICS
from lore.reminders.delivery import Deliver, Delivery, session_delivery
from lore.reminders.scheduler import Scheduler
from lore.search import embed_backlog_forever
from lore.sessions.closing import close_idle_sessions, idle_close_forever
from lore.tasks.heartbeat import heartbeat_forever
from lore.tasks.runner import TaskRunner, TurnReply

if TYPE_CHECKING:
    import uvicorn

    from lore.config import Config
    from lore.runtime import Runtime

__all__ = ["Daemon", "connected_line", "http_server"]

log = logging.getLogger(__name__)


class Daemon:
    """Everything `lore serve` runs for one runtime, and the gateway when given the
    listening socket. `run()` until `stop()` (or SIGTERM, or the gateway stopping);
    `run_once()` delivers what is due and closes idle sessions, then returns. `settings`
    reads the configuration again (SIGHUP)."""

    def __init__(
        self,
        lore: Runtime,
        *,
        listener: socket.socket | None = None,
        settings: Callable[[], Config] | None = None,
    ) -> None:
        self.lore = lore
        self.listener = listener
        self.settings = settings
        # Every chat channel whose token is set (`lore.channels.plugin`), not started yet.
        self.channels: list[Channel] = open_channels(lore)
        self.scheduler = Scheduler(
            lore.reminders,
            lore.clock,
            self._deliver,
            accepts=self._accepts,
            max_sleep=lore.config.reminders.poll_seconds,
            lease_seconds=lore.config.reminders.lease_seconds,
            holder=lore.lease_holder,
        )
        self._into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
        self.tasks = TaskRunner(
            lore.tasks,
            lore.sessions,
            lore.clock,
            self._task_turn,
            queued=self.scheduler.wake,
            holder=lore.lease_holder,
            max_sleep=lore.config.reminders.poll_seconds,
        )
        self._routes = ExitStack()
        self._owner_pushers: dict[str, Deliver] = {}  # channels that reach the owner 1:1
        self._tasks: list[asyncio.Task[None]] = []
        self._server: uvicorn.Server | None = None
        self._gateway: asyncio.Task[None] | None = None

    async def run_once(self) -> None:
        """Deliver what is due now (chat channels by push), close idle sessions, close."""
        try:
            self._catch_sigterm()
            for channel in self.channels:
                self._route(channel.name, channel.deliver, reaches_owner=channel.reaches_owner)
            self._route_owner()
            await self.tasks.run_once()
            await self.scheduler.run_once()
            await close_idle_sessions(self.lore)
        finally:
            await self.aclose()

    async def run(self) -> None:
        """Start everything, deliver reminders until stopped, then stop in order."""
        try:
            self.start()
            await self.scheduler.run_forever()
        finally:
            await self.aclose()

    def start(self) -> None:
        """Start the background work, the chat channels and the gateway (in the running
        event loop); reminders start with `run()`."""
        lore = self.lore
        self._catch_sigterm()
        self._catch(getattr(signal, "SIGHUP", None), self.reload)
        self._spawn(idle_close_forever(lore), "idle-close")
        self._spawn(dream_forever(lore), "dream")
        self._spawn(embed_backlog_forever(lore), "embed")
        self._spawn(backup_forever(lore.config, lore.clock), "backup")
        from lore.import_extraction import extraction_forever

        self._spawn(extraction_forever(lore), "import-extraction")  # imports agreed to
        self._spawn(self.tasks.run_forever(), "tasks")
        if lore.config.heartbeat.seconds:
            self._spawn(heartbeat_forever(lore, self._task_turn, self.scheduler.wake), "heartbeat")
        if self.listener is not None:
            self._start_gateway(self.listener)
        for channel in self.channels:
            self._route(channel.name, channel.deliver, reaches_owner=channel.reaches_owner)
            # Updates a stopped `lore serve` took but never answered are answered now.
            self._spawn(channel.run_forever(), channel.name)
        if self.channels:
            print(connected_line(self.channels), file=sys.stderr)
        print(
            "lore serve: reminders, idle-session close, Dream and search embedding running; "
            "Ctrl+C stops",
            file=sys.stderr,
        )
        self._route_owner()

    def stop(self) -> None:
        """Ask `run()` to finish the delivery in hand and return; a turn cut short from
        now on keeps the reply shown so far."""
        self.lore.bus.stop()
        self.tasks.stop()
        self.scheduler.stop()

    def reload(self) -> None:
        """Read the settings again and apply those read where they are used; say in one
        log line what changed and what waits for a restart. Settings that do not load
        leave the running ones as they are."""
        if self.settings is None:
            return
        try:
            fresh = self.settings()
        except LoreError as exc:
            log.warning("config.toml not reloaded, the running settings stay: %s", exc)
            return
        outcome = reload_settings(self.lore.config, fresh)
        self.lore.config = outcome.config
        self.scheduler.max_sleep = outcome.config.reminders.poll_seconds
        self.tasks.max_sleep = outcome.config.reminders.poll_seconds
        self.scheduler.wake()
        resize_log(outcome.config.log)
        log.info("%s", outcome.line())

    async def aclose(self) -> None:
        """Stop the gateway (letting replies in flight finish), then the rest."""
        try:
            if self._server is not None and self._gateway is not None:
                self._server.should_exit = True
                await asyncio.gather(self._gateway, return_exceptions=True)
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._routes.close()
        finally:
            for channel in self.channels:
                try:
                    await channel.aclose()
                except Exception:  # one channel's failure to close never keeps the rest open
                    log.exception("%s: closing failed", channel.name)
            await self.lore.aclose()

    # -- the reminder's route ------------------------------------------------------------

    def _route(self, channel: str, deliver: Deliver, *, reaches_owner: bool) -> None:
        """Reminders of the channel's conversations go out through `deliver`; so may the
        owner's, when the channel reaches the owner 1:1."""
        self._routes.enter_context(self.lore.bus.deliver_for(channel, deliver))
        if reaches_owner:
            self._owner_pushers[channel] = deliver

    def _route_owner(self) -> None:
        """With one conversation for the owner, its reminders go out through the channels
        that reach the owner 1:1."""
        if not self.lore.config.channels.unified_owner_session:
            return
        owner = owner_reminders(self.lore, self._owner_pushers)
        self._routes.enter_context(self.lore.bus.deliver_to(OWNER_SCOPE, owner))

    def _accepts(self, scope: str) -> bool:
        lore = self.lore
        return not lore.sessions.attached(scope) or not terminal_delivers(lore, scope)

    async def _deliver(self, due: Delivery) -> None:
        try:
            await self._into_session(due)
        except Exception:
            METRICS.count("lore_reminder_failures")
            raise  # the scheduler retries it
        METRICS.count("lore_reminders_delivered", late="yes" if due.late else "no")
        HEALTH.delivered((due.at - due.reminder.due_at).total_seconds())
        lore = self.lore
        stamp = lore.clock.now().astimezone(lore.zone).strftime("%Y-%m-%d %H:%M:%S %z")
        late = " (late)" if due.late else ""
        line = f"{stamp} delivered {due.noun} #{due.id} to {due.scope}{late}: {due.text}"
        try:
            print(line, flush=True)
        except OSError as exc:
            # It is delivered: a failure now would only deliver it again. The line quotes
            # the reminder, which the log never does.
            log.warning("could not print the delivery of reminder #%d: %s", due.id, exc)

    async def _task_turn(self, inbound: Inbound) -> TurnReply:
        """A scheduled task's (or the heartbeat's) turn, in its conversation's queue; no
        one is there to approve a tool that asks first, so such a tool is refused."""
        outcome = await self.lore.bus.send(inbound)
        if outcome.ok and outcome.text.strip():
            return TurnReply(outcome.text)
        failed = [e.message for e in outcome.events if isinstance(e, ReplyFailed)]
        return TurnReply(failure=failed[-1] if failed else outcome.text or "no reply")

    # -- starting ------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(work, name=name))

    def _catch_sigterm(self) -> None:
        """A service manager stops us with SIGTERM: finish the delivery in hand, then exit."""
        self._catch(signal.SIGTERM, self.stop)

    def _catch(self, signum: int | None, handler: Callable[[], None]) -> None:
        if signum is None:  # not on this system (SIGHUP on Windows)
            return
        try:
            asyncio.get_running_loop().add_signal_handler(signum, handler)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, not the main thread
            pass

    def _start_gateway(self, listener: socket.socket) -> None:
        self._server = http_server(self.lore, listener, self.channels)
        self._gateway = asyncio.create_task(self._server.serve(sockets=[listener]), name="gateway")
        # The gateway stopping (Ctrl+C, SIGTERM, which it catches) stops the rest.
        self._gateway.add_done_callback(lambda _: self.stop())


def connected_line(channels: Sequence[Channel]) -> str:
    """The one start-up line that says which chat channels are connected, and how."""
    shown = ", ".join(f"{channel.name} ({channel.describe()})" for channel in channels)
    return f"lore serve: chat channels connected: {shown}"


def http_server(
    lore: Runtime, listener: socket.socket, channels: Sequence[Channel] = ()
) -> uvicorn.Server:
    """The gateway's uvicorn server for `listener`, with the webhook routes of the chat
    `channels` (LINE's, WhatsApp's, Telegram's when it is set up that way), not started."""
    from lore.channels.http import create_app
    from lore.channels.http.auth import Clients, ensure_token
    from lore.channels.http.server import GatewayServer, server_config

    token = ensure_token(lore.config)
    host, port = lore.config.api.host, listener.getsockname()[1]
    app = create_app(lore, clients=Clients(token, lore.config), host=host, channels=channels)
    config = server_config(app, lore.config.api)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"lore serve: http://{shown}:{port}/ (web page), /v1 (OpenAI-compatible), /api, "
        "/mcp, /docs; token: lore serve --show-token",
        file=sys.stderr,
    )
    # Stopping refuses any tool still waiting for the page's Approve / Deny.
    return GatewayServer(config, app.state.gateway.approvals)
