"""The heartbeat: every `[heartbeat] every`, one turn over the owner's HEARTBEAT.md
checklist (in the home), which speaks to the owner only when something needs them.

The protocol: the model answers exactly HEARTBEAT_OK when nothing needs attention (the
token alone, whatever whitespace or punctuation is around it), and otherwise only what
needs attention, which goes to the owner's conversation through the outbox (once, under
the run's key). The turn runs in a conversation of its own, `cli:heartbeat`, started
afresh before every run, so its prompt is the same size on the hundredth run as on the
first (bench/heartbeat_tokens.py); a checklist that is missing or empty costs no call.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lore.errors import DatabaseUnavailable
from lore.events import Inbound
from lore.ports.outbox import OutboxItem, ReminderPayload

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.tasks.runner import RunTurn

__all__ = [
    "HEARTBEAT_FILE",
    "HEARTBEAT_OK",
    "HEARTBEAT_SCOPE",
    "heartbeat_forever",
    "heartbeat_once",
]

log = logging.getLogger(__name__)

HEARTBEAT_FILE = "HEARTBEAT.md"
HEARTBEAT_OK = "HEARTBEAT_OK"
HEARTBEAT_SCOPE = "cli:heartbeat"  # an owner's scope: it sees the curated files

_PROMPT = (
    "(heartbeat) This is a periodic check, not a message from the owner. Go through the "
    "checklist below, using your tools where an item asks you to look something up. If "
    f"nothing needs the owner's attention now, answer exactly {HEARTBEAT_OK} and nothing "
    "else. Otherwise answer with only what needs their attention, briefly; it is sent to "
    "them as it is.\n\n<checklist>\n{checklist}\n</checklist>"
)
_QUIET = re.compile(rf"^\W*{HEARTBEAT_OK}\W*$")


def checklist(lore: Services) -> str:
    """The checklist's text, or "" when there is none worth a call (no file, only blank
    lines and headings)."""
    path = lore.config.home / HEARTBEAT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("heartbeat: cannot read %s: %s", path, exc)
        return ""
    items = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    return text.strip() if items else ""


def needs_attention(reply: str) -> bool:
    """Anything but the HEARTBEAT_OK token alone is for the owner."""
    return bool(reply.strip()) and _QUIET.match(reply.strip()) is None


async def heartbeat_once(lore: Services, turn: RunTurn, now: datetime | None = None) -> str | None:
    """One heartbeat: what it said to the owner, or None (all well, no checklist, or the
    turn failed, which is logged)."""
    text = checklist(lore)
    if not text:
        return None
    now = now or lore.clock.now()
    lore.session(HEARTBEAT_SCOPE).reset()  # bounded: each run starts from nothing
    inbound = Inbound(
        scope=HEARTBEAT_SCOPE,
        channel="cli",
        author=lore.config.user_name,
        text=_PROMPT.format(checklist=text),
        max_tool_rounds=lore.config.tasks.max_rounds,
    )
    try:
        got = await asyncio.wait_for(turn(inbound), lore.config.tasks.max_seconds)
    except TimeoutError:
        log.warning(
            "heartbeat: the turn ran past %d s and was stopped", lore.config.tasks.max_seconds
        )
        return None
    if got.failure:
        log.warning("heartbeat: the turn failed: %s", got.failure)
        return None
    if not needs_attention(got.text):
        log.info("heartbeat: nothing needs attention")
        return None
    scope = lore.config.conversation_scope("cli:default")
    moment = now.astimezone(UTC).replace(microsecond=0)
    item = OutboxItem(
        id=0,
        key=f"heartbeat:{int(moment.timestamp())}",
        scope=scope,
        channel="",
        kind="heartbeat",
        payload=ReminderPayload(reminder_id=0, text=got.text.strip(), author="", due_at=moment),
        status="pending",
        attempts=0,
        created_at=moment,
    )
    lore.outbox.put(item, now=now)
    return got.text.strip()


async def heartbeat_forever(
    lore: Services, turn: RunTurn, wake: Callable[[], None] = lambda: None
) -> None:
    """A heartbeat every `[heartbeat] every` until cancelled; the first one period after
    the start."""
    while True:
        period = lore.config.heartbeat.seconds
        if not period:
            return
        await asyncio.sleep(period)
        try:
            said = await heartbeat_once(lore, turn)
        except DatabaseUnavailable as exc:
            log.warning("heartbeat: waits for the database: %s", exc)
            continue
        except Exception:  # logged; the next beat comes all the same
            log.exception("heartbeat: the run failed")
            continue
        if said is not None:
            wake()  # the scheduler delivers it now
