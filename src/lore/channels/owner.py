"""One owner, many channels: where the reminders of the owner's one conversation go.

With `channels.unified_owner_session` the owner's 1:1 chats (Telegram, LINE) and the
terminal's default conversation are one scope, `owner` (`Config.conversation_scope`):
one session, one memory, one queue on the bus. A reminder set there, wherever it was
set, goes to the channel `channels.reminder_channel` names, or (when that is empty) to
the channel the owner last wrote on. The terminal delivers it when that channel is the
terminal and a terminal shows the conversation; otherwise `lore serve` pushes it through
that channel, or, when it cannot (the terminal is closed, the web page cannot push), the
first channel that can. It always lands in the conversation too, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lore.config import OWNER_SCOPE, Config
from lore.reminders.delivery import reminder_event

if TYPE_CHECKING:
    from lore.ports.sessions import LiveSession
    from lore.reminders.delivery import Deliver, Delivery
    from lore.runtime import Runtime

__all__ = ["owner_reminders", "reminder_channel", "terminal_delivers"]

TERMINAL = "cli"


def reminder_channel(config: Config, session: LiveSession) -> str:
    """The channel the owner's reminders go to: the chosen one, else where they last
    wrote ("cli" when they never wrote elsewhere)."""
    if config.channels.reminder_channel:
        return config.channels.reminder_channel
    for message in reversed(session.messages):
        if message["role"] == "user" and not message.get("cancelled"):
            return str(message.get("channel") or TERMINAL)
    return TERMINAL


def terminal_delivers(lore: Runtime, scope: str) -> bool:
    """Does a terminal showing `scope` deliver its reminders? Always, but for the owner's
    conversation when its reminders go to another channel (then `lore serve` does)."""
    if scope != OWNER_SCOPE or not lore.config.channels.unified_owner_session:
        return True
    return reminder_channel(lore.config, lore.session(scope)) == TERMINAL


def owner_reminders(lore: Runtime, pushers: Mapping[str, Deliver]) -> Deliver:
    """`lore serve`'s delivery of the owner's reminders (already in the conversation)
    through the channels that can push to the owner, by name ("telegram": its deliver),
    in order of preference."""

    async def deliver(due: Delivery) -> None:
        target = reminder_channel(lore.config, lore.session(OWNER_SCOPE))
        through = pushers.get(target) or next(iter(pushers.values()), None)
        if through is not None:
            await through(due)  # raises when refused: the scheduler retries it
        else:
            lore.bus.publish(due.scope, reminder_event(due))

    return deliver
