"""The message bus: one queue per conversation scope, events routed to their channel.

Channels hand it `Inbound` messages. Messages of one scope run one at a time, in the
order they arrived (a group where three people write at once gets a legal transcript,
each message with its own author), and after a turn another process is running in it
(a terminal beside `lore serve`); different scopes run concurrently. A turn's events go
to the `emit` of the channel that sent the message. Events no message asked for (a
reminder due, a background notice) go to the channel that attached to the scope.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lore.core.admission import refusal
from lore.core.commands import is_command, run_command
from lore.core.turn import TurnRunner, tool_context
from lore.errors import InvalidInputError
from lore.events import CommandOutput, Emit, Event, Inbound, Trust
from lore.scope import Scope

if TYPE_CHECKING:
    from pathlib import Path

    from lore.core.approval import Approver
    from lore.core.feature import Assembled
    from lore.core.loop import TurnResult
    from lore.ports.sessions import LiveSession
    from lore.reminders.delivery import Deliver

__all__ = ["Bus", "Conversation", "Outcome"]

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What became of one inbound message."""

    result: TurnResult | None = None  # a turn that got its reply
    command: CommandOutput | None = None  # a slash command's output
    events: list[Event] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.command is not None:
            return self.command.ok
        return self.result is not None

    @property
    def text(self) -> str:
        """The reply, or the command's output."""
        if self.command is not None:
            return self.command.text
        return self.result.text if self.result is not None else ""


class _Queue:
    """One scope's queue: a FIFO lock, and how many messages hold or wait for it."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class Bus:
    def __init__(self, services: Assembled) -> None:
        self.services = services
        self.turns = TurnRunner(services)
        self._queues: dict[str, _Queue] = {}
        self._routes: dict[str, Emit] = {}
        self._by_channel: dict[str, Deliver] = {}  # reminders' deliveries, by channel
        self._by_scope: dict[str, Deliver] = {}  # and by one scope, which comes first

    async def send(
        self, inbound: Inbound, emit: Emit | None = None, approver: Approver | None = None
    ) -> Outcome:
        """Run one message in its scope's queue; its events go to `emit`, a tool's
        "may I?" to `approver` (the channel's way of asking the owner)."""
        outcome = Outcome()

        def record(event: Event) -> None:
            outcome.events.append(event)
            if emit is not None:
                emit(event)

        too_long = refusal(inbound.text, self.services.config.max_message_chars)
        if too_long is not None:  # refused before anything of it is kept, on every channel
            log.warning(
                "refused a message of %d characters in %s", len(inbound.text), inbound.scope
            )
            if inbound.respond:
                outcome.command = CommandOutput(too_long)
                record(outcome.command)
            return outcome
        queue = self._queues.get(inbound.scope)
        if queue is None:
            queue = self._queues[inbound.scope] = _Queue()
        queue.users += 1
        try:
            # FIFO: waiters are served in arrival order; another process's turn in the
            # same conversation (a terminal beside `lore serve`, another worker) is waited for.
            async with queue.lock, self.services.sessions.turn(inbound.scope):
                answered = self._answer(inbound)
                if answered is not None:
                    outcome.command = answered
                    record(answered)
                elif not inbound.respond:
                    self.turns.record(inbound)
                elif is_command(inbound.text):
                    outcome.command = await run_command(self.services, inbound, record)
                else:
                    outcome.result = await self.turns.run(inbound, record, approver)
        finally:
            queue.users -= 1
            if not queue.users:  # nobody running or waiting: forget the scope's queue
                del self._queues[inbound.scope]
        return outcome

    def _answer(self, inbound: Inbound) -> CommandOutput | None:
        """The speaker's answer to a question they were asked here ("forget everything
        I told you?"); a group message need not be addressed to Lore to answer."""
        said = self.services.confirmations.answer(
            inbound.scope, inbound.author, inbound.text, self.services.clock.now()
        )
        return None if said is None else CommandOutput(said)

    def busy(self, scope: str) -> bool:
        """Is a message of this scope running or waiting?"""
        return scope in self._queues

    # -- routing --------------------------------------------------------------------------

    @contextmanager
    def attach(self, scope: str, emit: Emit) -> Iterator[None]:
        """Route this scope's unasked-for events (reminders, notices) to `emit`."""
        self._routes[scope] = emit
        try:
            yield
        finally:
            if self._routes.get(scope) is emit:
                del self._routes[scope]

    def route(self, scope: str) -> Emit | None:
        return self._routes.get(scope)

    @contextmanager
    def deliver_for(self, channel: str, deliver: Deliver) -> Iterator[None]:
        """Deliver reminders of every scope of a channel ("telegram") through it: the
        scheduler awaits it, so a failed send is retried, never lost."""
        with self._delivering(self._by_channel, channel, deliver):
            yield

    @contextmanager
    def deliver_to(self, scope: str, deliver: Deliver) -> Iterator[None]:
        """Deliver one scope's reminders (the owner's one conversation) through `deliver`,
        before any channel's delivery."""
        with self._delivering(self._by_scope, scope, deliver):
            yield

    @staticmethod
    @contextmanager
    def _delivering(table: dict[str, Deliver], name: str, deliver: Deliver) -> Iterator[None]:
        table[name] = deliver
        try:
            yield
        finally:
            if table.get(name) is deliver:
                del table[name]

    def deliverer(self, scope: str) -> Deliver | None:
        through = self._by_scope.get(scope)
        if through is not None or not self._by_channel:
            return through
        try:
            channel = Scope.parse(scope).channel
        except InvalidInputError:  # stored before keys were checked: no channel's
            return None
        return self._by_channel.get(channel)

    def publish(self, scope: str, event: Event) -> bool:
        """Send an event to the channel attached to `scope`; False when none is."""
        emit = self._routes.get(scope)
        if emit is None:
            return False
        emit(event)
        return True

    def system_prompt(self, inbound: Inbound) -> str:
        """The system prompt a turn for this message would send."""
        session = self.services.session(inbound.scope)
        return self.turns.system_prompt(tool_context(self.services, session, inbound))

    def stop(self) -> None:
        """A clean shutdown: turns cut short from now on keep the reply shown so far."""
        self.turns.stopping = True


class Conversation:
    """A handle on one conversation for a channel with one speaker (the terminal, a test):
    it fills in the inbound envelope and hands each message to the bus."""

    def __init__(
        self,
        bus: Bus,
        scope: str,
        *,
        emit: Emit,
        author: str,
        channel: str,
        trust: Trust,
        approver: Approver | None = None,
        project: Path | None = None,
    ) -> None:
        self.bus = bus
        self.scope = scope
        self.emit = emit
        self.author = author
        self.channel = channel
        self.trust = trust
        self.approver = approver
        self.project = project

    @property
    def session(self) -> LiveSession:
        return self.bus.services.session(self.scope)

    def inbound(self, text: str) -> Inbound:
        return Inbound(
            self.scope, self.channel, self.author, text, self.trust, project=self.project
        )

    async def send(self, text: str) -> Outcome:
        """A slash command or a turn, in this conversation's queue."""
        return await self.bus.send(self.inbound(text), self.emit, self.approver)

    def system_prompt(self) -> str:
        """The system prompt the next turn would send (the start-up benchmark times it)."""
        return self.bus.system_prompt(self.inbound(""))
