"""The owner on LINE and Telegram, for the tests of one owner across channels: their ids,
and the scenario those tests share. At the terminal (its own runtime on the same home, as a
second process would be) the owner asks what they said on a chat channel, then sets a
reminder there; `lore serve`'s scheduler is what delivers it."""

from __future__ import annotations

import io

from lore.channels.owner import terminal_delivers
from lore.channels.piped import run_piped
from lore.clock import FixedClock
from lore.config import OWNER_SCOPE, Config
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime, build

# LINE ids, in LINE's shape: the owner, a family member, the family's group.
JOHN = "U1111111111111111111111111111111a"
MOM = "U2222222222222222222222222222222b"
FAMILY = "C0000000000000000000000000000f4m1"
# Telegram: the owner, and the owner's private chat with the bot.
TG_OWNER = {"id": 111, "is_bot": False, "first_name": "John"}
TG_OWNER_CHAT = {"id": 111, "type": "private", "first_name": "John"}


async def ask_then_set_a_reminder_at_the_terminal(
    config: Config, clock: FixedClock, reminder: str
) -> list[str]:
    """The owner, in `lore chat` (piped): "when is my flight?" (answered "Thursday at 7:00,
    CI-100."), then "remind me to leave for the airport in 10 minutes", which sets
    `reminder` due in 10 minutes. Returns the window the model was sent for the question."""
    model = ScriptedProvider()
    terminal = build(config, provider=model, clock=clock)
    model.reply("Thursday at 7:00, CI-100.")
    model.tool_call("set_reminder", {"text": reminder, "when": "in 10 minutes"}).reply(
        "I'll remind you."
    )
    try:
        out = await _terminal(
            terminal, "when is my flight?", "remind me to leave for the airport in 10 minutes"
        )
    finally:
        await terminal.aclose()
    assert "Thursday at 7:00, CI-100." in out
    return [content_text(m["content"]) for m in model.requests[0].messages]


def serve_scheduler(lore: Runtime) -> Scheduler:
    """`lore serve`'s scheduler: into the conversation, then out through its channel; it
    leaves a reminder to an open terminal when that terminal is the one to deliver it."""
    deliver = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)

    def accepts(scope: str) -> bool:
        return not lore.sessions.attached(scope) or not terminal_delivers(lore, scope)

    return Scheduler(lore.reminders, lore.clock, deliver, accepts=accepts)


async def _terminal(lore: Runtime, *lines: str) -> str:
    """The owner typing into `lore chat` (piped), in its default conversation."""
    out, err = io.StringIO(), io.StringIO()
    source = io.BytesIO("".join(f"{line}\n" for line in lines).encode("utf-8"))
    key = lore.config.conversation_scope("cli:default")
    assert key == OWNER_SCOPE
    assert await run_piped(lore, key, source, out=out, err=err) == 0, err.getvalue()
    return out.getvalue()
