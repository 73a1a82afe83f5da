"""Closing a live session (/new, idle close): archive → index → reset, then a summary.

The order is what makes it crash-safe. The exact transcript is written and fsynced
first; then the index line; only then is the live session cleared (a new session id).
Killed at any point, every message is in the live session or a durable archive, and
`recover_interrupted` (run before every idle check) finishes or tidies what a crash
left: stray temporary files, a torn index line, an archive that never got its index
line, a live session that was indexed but not cleared. The summary (slug, summary, key
messages) is written afterwards in the background and never holds up the reply.

Tests inject a `fault(step)` callback, called after each step in `STEPS`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from lore.errors import SessionError
from lore.files import atomic_write
from lore.sessions.archive import ArchivedSession, SessionArchive, slugify
from lore.sessions.keys import key_to_filename
from lore.sessions.live import SessionMeta

if TYPE_CHECKING:
    from lore.agent.events import Emit
    from lore.app import Lore
    from lore.sessions.live import LiveSession

__all__ = [
    "STEPS",
    "close_idle_sessions",
    "close_if_idle",
    "close_session",
    "idle_close_forever",
    "live_keys",
    "new_session",
    "recover_interrupted",
    "schedule_summary",
    "session_archive",
]

log = logging.getLogger(__name__)

FaultHook = Callable[[str], None]

# Points a test can crash at, in order.
STEPS = ("archive_tmp_written", "archive_written", "index_written", "session_reset")


def session_archive(lore: Lore) -> SessionArchive:
    return SessionArchive(lore.config.sessions_dir, lore.config.home)


def close_session(
    lore: Lore,
    key: str,
    *,
    reason: str = "new",
    session: LiveSession | None = None,
    fault: FaultHook | None = None,
    _attempt: int = 0,
) -> ArchivedSession | None:
    """Archive the live session of `key` and start a fresh one; None if it was empty."""
    session = session or lore.session(key)
    session.refresh()
    archive = session_archive(lore)
    if not session.messages:
        if reason == "new":
            session.reset()
        return None
    meta = replace(session.meta, extra=dict(session.meta.extra))
    messages = list(session.messages)
    indexed = archive.get(meta.session_id)
    if indexed is not None and indexed.message_count == len(messages):
        entry = indexed  # a close that crashed after indexing: only the reset is left
    else:
        entry = archive.write_transcript(
            meta,
            messages,
            ended_at=lore.clock.now(),
            zone=lore.zone,
            slug=_slug_for(messages),
            reason=reason,
            fault=fault,
        )
        _step(fault, "archive_written")
        archive.append_index(entry)
    _step(fault, "index_written")
    session.refresh()
    if session.meta.session_id != meta.session_id:
        return entry  # closed by another process meanwhile; nothing left to clear
    if len(session.messages) != len(messages):
        # Another writer appended in between: archive again, with everything.
        if _attempt >= 3:
            raise SessionError(f"session {key} keeps changing; it was archived but not cleared")
        log.info("session %s changed while closing; archiving it again", key)
        return close_session(
            lore, key, reason=reason, session=session, fault=fault, _attempt=_attempt + 1
        )
    session.reset()
    if reason == "idle":
        session.update_meta(
            extra={
                "previous_session_id": entry.session_id,
                "previous_transcript": entry.transcript_path,
            }
        )
    _step(fault, "session_reset")
    return entry


async def new_session(
    lore: Lore, key: str, *, session: LiveSession | None = None, emit: Emit | None = None
) -> ArchivedSession | None:
    """/new: close the live session now, summarise it in the background."""
    entry = close_session(lore, key, reason="new", session=session)
    if entry is not None:
        schedule_summary(lore, entry, emit=emit)
    return entry


async def close_if_idle(
    lore: Lore, key: str, *, emit: Emit | None = None
) -> ArchivedSession | None:
    """Close `key` as by /new if it has been idle longer than `idle_minutes`.

    Call it when a chat starts (and `lore serve` calls it for every session). It first
    finishes any close a crash interrupted.
    """
    for pending in recover_interrupted(lore):
        schedule_summary(lore, pending, emit=emit)
    return _close_when_idle(lore, key, emit=emit)


async def close_idle_sessions(lore: Lore, *, emit: Emit | None = None) -> list[ArchivedSession]:
    """Idle-close every live session under the sessions directory."""
    for pending in recover_interrupted(lore):
        schedule_summary(lore, pending, emit=emit)
    closed = []
    for key in _live_keys(lore):
        entry = _close_when_idle(lore, key, emit=emit)
        if entry is not None:
            closed.append(entry)
    return closed


async def idle_close_forever(lore: Lore, interval_seconds: float = 60.0) -> None:
    """For `lore serve`: idle-close sessions every `interval_seconds` until cancelled."""
    while True:
        try:
            closed = await close_idle_sessions(lore)
            for entry in closed:
                log.info("closed idle session %s (%s)", entry.key, entry.session_id[:8])
        except Exception:  # keep serving; the next round retries
            log.exception("idle close failed")
        await asyncio.sleep(interval_seconds)


def _close_when_idle(lore: Lore, key: str, *, emit: Emit | None) -> ArchivedSession | None:
    minutes = lore.config.consolidation.idle_minutes
    live = _read_live_meta(lore, key)
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
        schedule_summary(lore, entry, emit=emit)
    return entry


def schedule_summary(lore: Lore, entry: ArchivedSession, *, emit: Emit | None = None) -> None:
    """Write the session's summary in the background (one at a time, once)."""
    from lore.memory.session_summary import write_session_summary

    name = f"session-summary:{entry.session_id}"
    if lore.background.has(name):
        return  # already on its way (recovery finds it pending until it is written)

    def report(exc: BaseException) -> None:
        if emit is not None:
            from lore.agent.events import Notice

            emit(Notice(f"session summary failed: {exc}", "warning"))

    async def job() -> None:
        await write_session_summary(lore, entry)

    lore.background.spawn(job, name=name, key="session-summary", on_error=report)


def recover_interrupted(lore: Lore, *, min_age: float = 60.0) -> list[ArchivedSession]:
    """Finish what a crash in `close_session` left; the sessions still needing a summary
    (including those whose summary a crash or a kill interrupted).

    Temporary files younger than `min_age` seconds are left alone: they may belong to a
    close another process is doing right now.

    Every chat start calls this, so its cost must not grow with history: when neither the
    archive index nor the archive directory changed since the last pass that found
    everything in order (`sessions/.recovered.json`), the pass is skipped and only its
    pending summaries are re-checked; a full pass opens only transcripts missing from the
    index, never all of them.
    """
    archive = session_archive(lore)
    marker = lore.config.sessions_dir / ".recovered.json"
    stamp = _recovery_stamp(archive)
    known = _read_marker(marker, stamp)
    if known is not None:
        return _still_pending(lore, known)
    changed = False
    for tmp in archive.temp_files():
        # Never renamed into place: the live session (or the archive) still holds it all.
        try:
            if time.time() - tmp.stat().st_mtime < min_age:
                continue
        except FileNotFoundError:
            continue
        log.warning("removing an unfinished archive %s", tmp.name)
        tmp.unlink(missing_ok=True)
        changed = True
    indexed = {entry.session_id: entry for entry in archive.entries()}
    in_index = {entry.transcript_path.rsplit("/", 1)[-1] for entry in indexed.values()}
    for path in archive.transcripts():
        if path.name in in_index:
            continue  # indexed: nothing to finish, no need to open it
        data = archive.read_metadata(path)
        if data is None or data.get("session_id") in indexed:
            continue
        try:
            entry = ArchivedSession.from_dict(data)
        except (KeyError, TypeError, ValueError):
            continue
        live = _read_live_meta(lore, entry.key)
        if live is not None and live.session_id == entry.session_id:
            continue  # still live: its next close reuses this file
        archive.append_index(entry)
        indexed[entry.session_id] = entry
        changed = True
    for key in _live_keys(lore):
        live = _read_live_meta(lore, key)
        if live is None or live.session_id not in indexed:
            continue
        entry = indexed[live.session_id]
        session = lore.session(key)
        if len(session.messages) == entry.message_count:
            # Indexed but never cleared: finish the close.
            session.reset()
            changed = True
    pending = _still_pending(lore, indexed.values())
    young = bool(archive.temp_files())  # another close under way: look again next time
    if not changed and not young:
        _write_marker(marker, stamp, pending)
    return pending


def _still_pending(lore: Lore, entries: Iterable[ArchivedSession]) -> list[ArchivedSession]:
    """Sessions whose summary is pending and whose conversation has moved on (each live
    session's first line read once, however many sessions it has closed)."""
    live: dict[str, str | None] = {}
    found = []
    for entry in entries:
        if entry.summary != "pending":
            continue
        if entry.key not in live:
            meta = _read_live_meta(lore, entry.key)
            live[entry.key] = None if meta is None else meta.session_id
        if live[entry.key] != entry.session_id:
            found.append(entry)
    return found


def _recovery_stamp(archive: SessionArchive) -> list[int]:
    """What changes whenever a close (or a crash in one) leaves something to recover: the
    index file's size and time, and the archive directory's time (a file added, renamed
    or removed)."""
    stamp: list[int] = []
    for path in (archive.index_path, archive.dir):
        try:
            stat = path.stat()
        except FileNotFoundError:
            stamp += [-1, -1]
        else:
            stamp += [stat.st_size if path.is_file() else 0, stat.st_mtime_ns]
    return stamp


def _read_marker(marker: Path, stamp: list[int]) -> list[ArchivedSession] | None:
    """The pending sessions of the last complete pass, if nothing changed since."""
    try:
        data = json.loads(marker.read_bytes())
        if data.get("stamp") != stamp:
            return None
        return [ArchivedSession.from_dict(item) for item in data["pending"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_marker(marker: Path, stamp: list[int], pending: list[ArchivedSession]) -> None:
    if not marker.parent.exists():
        return  # nothing was ever closed here
    data = {"stamp": stamp, "pending": [entry.to_dict() for entry in pending]}
    try:
        atomic_write(marker, json.dumps(data, ensure_ascii=False).encode("utf-8"))
    except OSError as exc:  # only a cache: the next start makes a full pass
        log.warning("could not write %s: %s", marker.name, exc)


def _closed(lore: Lore, entry: ArchivedSession) -> bool:
    """Has the live session of the entry's key moved on from it?"""
    live = _read_live_meta(lore, entry.key)
    return live is None or live.session_id != entry.session_id


def _step(fault: FaultHook | None, name: str) -> None:
    if fault is not None:
        fault(name)


def _slug_for(messages: list[dict[str, object]]) -> str:
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return slugify(str(message["content"]))
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


def _read_live_meta(lore: Lore, key: str) -> SessionMeta | None:
    """The metadata line of `key`'s live session, without creating or loading it."""
    path = lore.config.sessions_dir / key_to_filename(key)
    try:
        with path.open("rb") as f:
            data = json.loads(f.readline())
        return SessionMeta.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_keys(lore: Lore) -> list[str]:
    """The conversation keys that have a live session file."""
    return _live_keys(lore)


def _live_keys(lore: Lore) -> list[str]:
    directory = lore.config.sessions_dir
    if not directory.exists():
        return []
    keys = []
    for path in sorted(directory.glob("*.jsonl")):
        if path.name == "_sessions.jsonl":
            continue
        try:
            with path.open("rb") as f:
                data = json.loads(f.readline())
            keys.append(str(data["key"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return keys
