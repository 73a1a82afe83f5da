"""The local sessions store: live sessions (`sessions/<key>.jsonl`), the exact archive
(`sessions/archive/`) and its index (`sessions/_sessions.jsonl`).

It is the only reader and writer of those formats. A close runs archive → index → reset
while holding the live session's lock, so nothing appended meanwhile can be lost; killed
at any step, every message is in the live session or a durable archive, and `recover`
finishes or tidies what the crash left. Tests inject `fault(step)` after each step.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from lore.backends.local.archive import SessionArchive
from lore.backends.local.live import LiveSession
from lore.files import atomic_write, try_lock
from lore.keys import key_to_filename
from lore.ports.sessions import (
    CLOSE_STEPS,
    ArchivedSession,
    FaultHook,
    SessionMeta,
    close_in_steps,
    finish_close,
)
from lore.ports.sessions import LiveSession as LiveSessionPort

__all__ = ["STEPS", "LocalSessions"]

log = logging.getLogger(__name__)

_KEPT = 256  # live sessions kept loaded
_TURN_POLL = 0.05  # seconds between tries for a turn another process is running

STEPS = CLOSE_STEPS  # points a test can crash at, in order


class LocalSessions:
    def __init__(self, sessions_dir: Path, home: Path) -> None:
        self.dir = sessions_dir
        self.archive = SessionArchive(sessions_dir, home)
        # Loaded sessions, most recently used last: each is kept current by `refresh()`,
        # which reads only what other processes appended since.
        self._live: OrderedDict[str, LiveSession] = OrderedDict()

    def live(self, key: str) -> LiveSession:
        session = self._live.pop(key, None)
        if session is None:
            session = LiveSession(self.dir, key)
        else:
            session.refresh()  # what other processes appended since: a stat and the tail
        self._live[key] = session
        while len(self._live) > _KEPT:
            self._live.popitem(last=False)
        return session

    def live_meta(self, key: str) -> SessionMeta | None:
        path = self.dir / key_to_filename(key)
        try:
            with path.open("rb") as f:
                data = json.loads(f.readline())
            return SessionMeta.from_dict(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def live_keys(self) -> list[str]:
        if not self.dir.exists():
            return []
        keys = []
        for path in sorted(self.dir.glob("*.jsonl")):
            if path.name == "_sessions.jsonl":
                continue
            try:
                with path.open("rb") as f:
                    data = json.loads(f.readline())
                keys.append(str(data["key"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return keys

    # -- closing -------------------------------------------------------------------------

    def close(
        self,
        session: LiveSessionPort,
        *,
        reason: str,
        ended_at: datetime,
        zone: tzinfo,
        slug: str,
        fault: FaultHook | None = None,
    ) -> ArchivedSession | None:
        return close_in_steps(
            self.archive,
            session,
            reason=reason,
            ended_at=ended_at,
            zone=zone,
            slug=slug,
            fault=fault,
        )

    def recover(self, *, min_age: float = 60.0) -> list[ArchivedSession]:
        """Finish what a crash in `close` left; the sessions still needing a summary
        (including those whose summary a crash or a kill interrupted).

        Temporary files younger than `min_age` seconds are left alone: they may belong to
        a close another process is doing right now.

        Every chat start calls this, so its cost must not grow with history: when neither
        the archive index nor the archive directory changed since the last pass that found
        everything in order (`sessions/.recovered.json`), the pass is skipped and only its
        pending summaries are re-checked; a full pass opens only transcripts missing from
        the index, never all of them.
        """
        archive = self.archive
        marker = self.dir / ".recovered.json"
        stamp = self._recovery_stamp()
        known = _read_marker(marker, stamp)
        if known is not None:
            return self._still_pending(known)
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
        written: dict[str, ArchivedSession] = {}  # unindexed transcripts of live sessions
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
            live = self.live_meta(entry.key)
            if live is not None and live.session_id == entry.session_id:
                written[entry.session_id] = entry  # still live: finished below, or kept
                continue
            archive.append_index(entry)
            indexed[entry.session_id] = entry
            changed = True
        busy = False
        for key in self.live_keys():
            live = self.live_meta(key)
            if live is None:
                continue
            stored = written.get(live.session_id) or self._as_written(indexed.get(live.session_id))
            if stored is None:
                continue
            with self._turn_free(key) as free:
                if not free:
                    busy = True  # a turn is under way there: the next pass finishes it
                    continue
                if finish_close(archive, self.live(key), stored):
                    indexed[stored.session_id] = stored
                    changed = True
        pending = self._still_pending(indexed.values())
        young = bool(archive.temp_files())  # another close under way: look again next time
        if not changed and not young and not busy:
            _write_marker(marker, stamp, pending)
        return pending

    def _as_written(self, entry: ArchivedSession | None) -> ArchivedSession | None:
        """An indexed transcript as its file says it was last written (a close that
        stopped after rewriting it has not indexed its new count yet)."""
        if entry is None:
            return None
        data = self.archive.read_metadata(self.archive.resolve(entry.transcript_path))
        if data is None or data.get("session_id") != entry.session_id:
            return None
        try:
            return ArchivedSession.from_dict(data)
        except (KeyError, TypeError, ValueError):
            return None

    def _still_pending(self, entries: Iterable[ArchivedSession]) -> list[ArchivedSession]:
        """Sessions whose summary is pending and whose conversation has moved on (each
        live session's first line read once, however many sessions it has closed)."""
        live: dict[str, str | None] = {}
        found = []
        for entry in entries:
            if entry.summary != "pending":
                continue
            if entry.key not in live:
                meta = self.live_meta(entry.key)
                live[entry.key] = None if meta is None else meta.session_id
            if live[entry.key] != entry.session_id:
                found.append(entry)
        return found

    def _recovery_stamp(self) -> list[int]:
        """What changes whenever a close (or a crash in one) leaves something to recover:
        the index file's size and time, and the archive directory's time (a file added,
        renamed or removed)."""
        stamp: list[int] = []
        for path in (self.archive.index_path, self.archive.dir):
            try:
                stat = path.stat()
            except FileNotFoundError:
                stamp += [-1, -1]
            else:
                stamp += [stat.st_size if path.is_file() else 0, stat.st_mtime_ns]
        return stamp

    def _closed(self, entry: ArchivedSession) -> bool:
        """Has the live session of the entry's key moved on from it?"""
        live = self.live_meta(entry.key)
        return live is None or live.session_id != entry.session_id

    # -- presence ------------------------------------------------------------------------

    @contextmanager
    def attach(self, key: str) -> Iterator[bool]:
        with try_lock(self.dir / key_to_filename(key, ".attached")) as free:
            yield free

    def redact_messages(
        self, match: Callable[[str], bool], redact: Callable[[Any], Any], *, dry_run: bool = False
    ) -> int:
        return 0  # transcripts are files under the home: forget everywhere rewrites them

    def attached(self, key: str) -> bool:
        path = self.dir / key_to_filename(key, ".attached")
        if not path.exists():
            return False
        with try_lock(path) as free:
            return not free

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        # Tried, not waited for in a thread: a cancelled wait must leave no lock behind.
        while True:
            with self._turn_free(key) as free:
                if free:
                    yield
                    return
            await asyncio.sleep(_TURN_POLL)

    def _turn_free(self, key: str) -> AbstractContextManager[bool]:
        """Hold the conversation's turn if nobody (here or elsewhere) is running one."""
        return try_lock(self.dir / key_to_filename(key, ".turn.lock"))


def _read_marker(marker: Path, stamp: list[int]) -> list[ArchivedSession] | None:
    """The pending sessions of the last complete recovery, if nothing changed since."""
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
