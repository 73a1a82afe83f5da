"""The local sessions store: live sessions (`sessions/<key>.jsonl`), the exact archive
(`sessions/archive/`) and its index (`sessions/_sessions.jsonl`).

It is the only reader and writer of those formats. A close runs archive → index → reset
while holding the live session's lock, so nothing appended meanwhile can be lost; killed
at any step, every message is in the live session or a durable archive, and `recover`
finishes or tidies what the crash left. Tests inject `fault(step)` after each step.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, tzinfo
from pathlib import Path

from lore.backends.local.archive import SessionArchive
from lore.backends.local.live import LiveSession
from lore.errors import SessionError
from lore.files import try_lock
from lore.keys import key_to_filename
from lore.ports.sessions import CLOSE_STEPS, ArchivedSession, FaultHook, SessionMeta
from lore.ports.sessions import LiveSession as LiveSessionPort

__all__ = ["STEPS", "LocalSessions"]

log = logging.getLogger(__name__)

_KEPT = 256  # live sessions kept loaded

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
        with session.locked():
            session.refresh()
            if not session.messages:
                if reason == "new":
                    session.reset()
                return None
            meta = replace(session.meta, extra=dict(session.meta.extra))
            messages = list(session.messages)
            indexed = self.archive.get(meta.session_id)
            if indexed is not None and indexed.message_count == len(messages):
                entry = indexed  # a close that crashed after indexing: only the reset is left
            else:
                entry = self.archive.write_transcript(
                    meta,
                    messages,
                    ended_at=ended_at,
                    zone=zone,
                    slug=slug,
                    reason=reason,
                    fault=fault,
                )
                _step(fault, "archive_written")
                self.archive.append_index(entry)
            _step(fault, "index_written")
            session.refresh()
            if session.meta.session_id != meta.session_id:
                return entry  # closed by another process meanwhile; nothing left to clear
            if len(session.messages) != len(messages):
                raise SessionError(f"session {session.key} changed while locked")
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

    def recover(self, *, min_age: float = 60.0) -> list[ArchivedSession]:
        """Finish what a crash in `close` left; the sessions still needing a summary
        (including those whose summary a crash or a kill interrupted).

        Temporary files younger than `min_age` seconds are left alone: they may belong to
        a close another process is doing right now.
        """
        archive = self.archive
        for tmp in archive.temp_files():
            # Never renamed into place: the live session (or the archive) still holds it all.
            try:
                if time.time() - tmp.stat().st_mtime < min_age:
                    continue
            except FileNotFoundError:
                continue
            log.warning("removing an unfinished archive %s", tmp.name)
            tmp.unlink(missing_ok=True)
        indexed = {entry.session_id: entry for entry in archive.entries()}
        for path in archive.transcripts():
            data = archive.read_metadata(path)
            if data is None or data.get("session_id") in indexed:
                continue
            try:
                entry = ArchivedSession.from_dict(data)
            except (KeyError, TypeError, ValueError):
                continue
            live = self.live_meta(entry.key)
            if live is not None and live.session_id == entry.session_id:
                continue  # still live: its next close reuses this file
            archive.append_index(entry)
            indexed[entry.session_id] = entry
        for key in self.live_keys():
            live = self.live_meta(key)
            if live is None or live.session_id not in indexed:
                continue
            entry = indexed[live.session_id]
            session = self.live(key)
            with session.locked():
                session.refresh()
                if (
                    session.meta.session_id == entry.session_id
                    and len(session.messages) == entry.message_count
                ):
                    session.reset()  # indexed but never cleared: finish the close
        return [
            entry
            for entry in indexed.values()
            if entry.summary == "pending" and self._closed(entry)
        ]

    def _closed(self, entry: ArchivedSession) -> bool:
        """Has the live session of the entry's key moved on from it?"""
        live = self.live_meta(entry.key)
        return live is None or live.session_id != entry.session_id

    # -- presence ------------------------------------------------------------------------

    @contextmanager
    def attach(self, key: str) -> Iterator[bool]:
        with try_lock(self.dir / key_to_filename(key, ".attached")) as free:
            yield free

    def attached(self, key: str) -> bool:
        path = self.dir / key_to_filename(key, ".attached")
        if not path.exists():
            return False
        with try_lock(path) as free:
            return not free


def _step(fault: FaultHook | None, name: str) -> None:
    if fault is not None:
        fault(name)
