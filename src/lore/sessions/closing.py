"""Closing a live session (/new, idle close), then telling the features (the memory
feature writes a summary in the background, which never holds up the reply).

The sessions store does the crash-safe part (archive → index → reset, under the
session's lock; `recover` finishes what a crash left). This module decides when: /new,
or a session idle longer than `consolidation.idle_minutes`, checked when a chat starts
and every minute by `lore serve`.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from lore.ports.sessions import ArchivedSession, FaultHook
from lore.text import slugify

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from datetime import tzinfo
    from pathlib import Path

    from lore.clock import Clock
    from lore.config import Config
    from lore.core.feature import Feature
    from lore.events import Emit
    from lore.messages import Message
    from lore.ports.sessions import LiveSession, SessionStore

__all__ = [
    "close_idle_sessions",
    "close_if_idle",
    "close_session",
    "idle_close_forever",
    "new_session",
    "recover_interrupted",
    "session_closed",
]

log = logging.getLogger(__name__)


class ClosingServices(Protocol):
    """What closing sessions uses; what follows a close is the features' (a summary)."""

    config: Config
    clock: Clock

    @property
    def zone(self) -> tzinfo: ...

    @property
    def sessions(self) -> SessionStore: ...

    def session(self, key: str) -> LiveSession: ...

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        """`job` on one worker at a time (see lore.core.services.Services)."""
        ...

    @property
    def features(self) -> list[Feature]: ...


def close_session(
    lore: ClosingServices,
    key: str,
    *,
    reason: str = "new",
    session: LiveSession | None = None,
    fault: FaultHook | None = None,
) -> ArchivedSession | None:
    """Archive the live session of `key` and start a fresh one; None if it was empty."""
    session = session or lore.session(key)
    session.refresh()
    return lore.sessions.close(
        session,
        reason=reason,
        ended_at=lore.clock.now(),
        zone=lore.zone,
        slug=_slug_for(session.messages),
        fault=fault,
    )


async def new_session(
    lore: ClosingServices, key: str, *, session: LiveSession | None = None, emit: Emit | None = None
) -> ArchivedSession | None:
    """/new: close the live session now, summarise it in the background."""
    entry = close_session(lore, key, reason="new", session=session)
    if entry is not None:
        session_closed(lore, entry, emit)
    return entry


async def close_if_idle(
    lore: ClosingServices, key: str, *, emit: Emit | None = None
) -> ArchivedSession | None:
    """Close `key` as by /new if it has been idle longer than `idle_minutes`.

    Call it when a chat starts (and `lore serve` calls it for every session). It first
    finishes any close a crash interrupted.
    """
    for pending in recover_interrupted(lore):
        session_closed(lore, pending, emit)
    return _close_when_idle(lore, key, emit=emit)


async def close_idle_sessions(
    lore: ClosingServices, *, emit: Emit | None = None
) -> list[ArchivedSession]:
    """Idle-close every live session under the sessions directory."""
    for pending in recover_interrupted(lore):
        session_closed(lore, pending, emit)
    closed = []
    for key in lore.sessions.live_keys():
        entry = _close_when_idle(lore, key, emit=emit)
        if entry is not None:
            closed.append(entry)
    return closed


async def idle_close_forever(lore: ClosingServices, interval_seconds: float = 60.0) -> None:
    """For `lore serve`: idle-close sessions every `interval_seconds` until cancelled
    (one worker a round: the others find the job taken and wait for the next)."""
    while True:
        try:
            with lore.exclusive("idle-close", None) as free:
                closed = await close_idle_sessions(lore) if free else []
            for entry in closed:
                log.info("closed idle session %s (%s)", entry.key, entry.session_id[:8])
        except Exception:  # keep serving; the next round retries
            log.exception("idle close failed")
        await asyncio.sleep(interval_seconds)


def _close_when_idle(
    lore: ClosingServices, key: str, *, emit: Emit | None
) -> ArchivedSession | None:
    minutes = lore.config.consolidation.idle_minutes
    live = lore.sessions.live_meta(key)
    if minutes <= 0 or live is None:
        return None
    idle = timedelta(minutes=minutes)
    updated = _parse_time(live.updated_at)
    if updated is not None and lore.clock.now() - updated < idle:
        return None  # cheap check first: no need to load the transcript
    session = lore.session(key)
    if not session.messages:
        return None
    last = _last_activity(session)
    if last is not None and lore.clock.now() - last < idle:
        return None
    entry = close_session(lore, key, reason="idle", session=session)
    if entry is not None:
        session_closed(lore, entry, emit)
    return entry


def session_closed(lore: ClosingServices, entry: ArchivedSession, emit: Emit | None) -> None:
    """Tell every feature a session was archived (the summary is written in the back)."""
    for feature in lore.features:
        for hook in feature.session_closed:
            hook(entry, emit)


def recover_interrupted(lore: ClosingServices, *, min_age: float = 60.0) -> list[ArchivedSession]:
    """Finish what a crash during a close left; the sessions still needing a summary."""
    return lore.sessions.recover(min_age=min_age)


def _slug_for(messages: list[Message]) -> str:
    for message in messages:
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, str):
            return slugify(content)
    return "session"


def _last_activity(session: LiveSession) -> datetime | None:
    moments = [_parse_time(session.meta.updated_at)]
    if session.messages:
        moments.append(_parse_time(str(session.messages[-1].get("timestamp", ""))))
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else None


def _parse_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
