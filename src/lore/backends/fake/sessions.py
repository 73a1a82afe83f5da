"""Live sessions, the archive and its index in memory, closed the way the local store
closes them: archive → index → reset under the session's lock, with the same fault steps,
and `recover` finishing what an exception at any step left."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Any

from lore.backends.fake.live import FakeLiveSession, LiveState, json_copy
from lore.errors import SessionError
from lore.llm.base import Message
from lore.messages import parse_message
from lore.ports.sessions import (
    ArchivedSession,
    FaultHook,
    LiveSession,
    SessionMeta,
    close_in_steps,
    finish_close,
)

__all__ = ["FakeArchive", "FakeSessions"]


class FakeArchive:
    def __init__(self) -> None:
        # Kept as JSON values, as a file would keep them (forget everywhere edits them).
        self._transcripts: dict[str, tuple[ArchivedSession, list[dict[str, Any]]]] = {}
        self._index: dict[str, ArchivedSession] = {}  # in the order they were last closed
        self._changes = 0
        self._versions: dict[str, tuple[int, int]] = {}  # session id -> (write, messages)
        self._metadata: dict[str, dict[str, Any]] = {}  # session id -> kept metadata

    @property
    def index_location(self) -> str:
        return "sessions/_sessions.jsonl"

    def entries(self) -> list[ArchivedSession]:
        return list(self._index.values())

    def get(self, session_id: str) -> ArchivedSession | None:
        return self._index.get(session_id)

    def read_messages(
        self, entry: ArchivedSession, *, offset: int = 0, limit: int | None = None
    ) -> tuple[list[Message], int]:
        if entry.session_id not in self._transcripts:
            raise SessionError(f"archived transcript {entry.transcript_path} is missing")
        messages = self._transcripts[entry.session_id][1]
        end = None if limit is None else offset + limit
        return [parse_message(json_copy(m)) for m in messages[offset:end]], len(messages)

    def link_summary(
        self, session_id: str, memory_path: str | None, slug: str, status: str
    ) -> None:
        entry = self.get(session_id)
        if entry is None:
            raise SessionError(f"no archived session {session_id}")
        linked = replace(entry, memory_path=memory_path, slug=slug, summary=status)
        self._index[session_id] = linked
        self._store(linked, self._transcripts[session_id][1])

    def fingerprint(self, entry: ArchivedSession) -> tuple[int, int] | None:
        return self._versions.get(entry.session_id)

    def stamp(self) -> tuple[int, int] | None:
        return (self._changes, len(self._index)) if self._changes else None

    def write_transcript(
        self,
        meta: SessionMeta,
        messages: list[Message],
        *,
        ended_at: datetime,
        zone: tzinfo,
        slug: str,
        reason: str,
        fault: FaultHook | None,
    ) -> ArchivedSession:
        earlier = self._transcripts.get(meta.session_id)
        if earlier is not None:
            path = earlier[0].transcript_path  # paths never change once written
        else:
            stamp = ended_at.astimezone(zone).strftime("%Y-%m-%d-%H%M")
            path = f"sessions/archive/{stamp}-{slug}--{meta.session_id[:8]}.jsonl"
        entry = ArchivedSession(
            session_id=meta.session_id,
            key=meta.key,
            slug=slug,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            ended_at=ended_at.isoformat(timespec="seconds"),
            message_count=len(messages),
            transcript_path=path,
            reason=reason,
        )
        _step(fault, "archive_tmp_written")
        self._store(entry, [json_copy(m) for m in messages])
        metadata = {"last_consolidated": meta.last_consolidated, "extra": meta.extra}
        self._metadata[meta.session_id] = json_copy(metadata)
        return entry

    def _store(self, entry: ArchivedSession, messages: list[dict[str, Any]]) -> None:
        self._transcripts[entry.session_id] = (entry, messages)
        self._changes += 1
        self._versions[entry.session_id] = (self._changes, len(messages))

    def append_index(self, entry: ArchivedSession) -> None:
        earlier = self._index.pop(entry.session_id, None)
        if earlier is not None and earlier.memory_path and not entry.memory_path:
            entry = replace(entry, memory_path=earlier.memory_path)
        self._index[entry.session_id] = entry
        self._changes += 1

    def metadata(self, entry: ArchivedSession) -> dict[str, Any]:
        return json_copy(self._metadata.get(entry.session_id, {}))

    def remove(self, session_ids: list[str]) -> int:
        found = 0
        for session_id in session_ids:
            found += self._index.pop(session_id, None) is not None
            self._transcripts.pop(session_id, None)
            self._metadata.pop(session_id, None)
        if found:
            self._changes += 1
        return found

    def written(self, session_id: str) -> ArchivedSession | None:
        """The session's transcript as last stored (its index entry may be older)."""
        stored = self._transcripts.get(session_id)
        return None if stored is None else stored[0]

    def unindexed(self) -> list[ArchivedSession]:
        """Transcripts written but never indexed (a close stopped in between)."""
        return [entry for sid, (entry, _) in self._transcripts.items() if sid not in self._index]


class FakeSessions:
    def __init__(self, shared: FakeSessions | None = None) -> None:
        if shared is None:
            self._archive = FakeArchive()
            self._live: dict[str, LiveState] = {}
            self._attached: set[str] = set()
            self._turns: dict[str, asyncio.Lock] = {}
        else:  # another process on the same storage: its own handles on the same state
            self._archive, self._live, self._attached, self._turns = (
                shared._archive,
                shared._live,
                shared._attached,
                shared._turns,
            )
        self._handles: dict[str, FakeLiveSession] = {}

    def reopened(self) -> FakeSessions:
        """The same sessions as another process sees them (with handles of its own)."""
        return FakeSessions(self)

    @property
    def archive(self) -> FakeArchive:
        return self._archive

    def live(self, key: str) -> FakeLiveSession:
        handle = self._handles.get(key)
        if handle is None:
            state = self._live.setdefault(key, LiveState.fresh(key))
            handle = self._handles[key] = FakeLiveSession(state)
        else:
            handle.refresh()
        return handle

    def live_meta(self, key: str) -> SessionMeta | None:
        state = self._live.get(key)
        return None if state is None else replace(state.meta, extra=dict(state.meta.extra))

    def live_keys(self) -> list[str]:
        return sorted(self._live)

    def close(
        self,
        session: LiveSession,
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
        for entry in self._archive.unindexed():
            live = self.live_meta(entry.key)
            if live is None or live.session_id != entry.session_id:
                self._archive.append_index(entry)
        for key, state in list(self._live.items()):
            written = self._archive.written(state.meta.session_id)
            if written is not None and not self._turn_under_way(key):
                finish_close(self._archive, FakeLiveSession(state), written)
        return [
            entry
            for entry in self._archive.entries()
            if entry.summary == "pending" and self._closed(entry)
        ]

    def _turn_under_way(self, key: str) -> bool:
        lock = self._turns.get(key)
        return lock is not None and lock.locked()

    def _closed(self, entry: ArchivedSession) -> bool:
        live = self.live_meta(entry.key)
        return live is None or live.session_id != entry.session_id

    @contextmanager
    def attach(self, key: str) -> Iterator[bool]:
        if key in self._attached:
            yield False
            return
        self._attached.add(key)
        try:
            yield True
        finally:
            self._attached.discard(key)

    def redact_messages(
        self, match: Callable[[str], bool], redact: Callable[[Any], Any], *, dry_run: bool = False
    ) -> int:
        changed = 0
        lines = [line for state in self._live.values() for line in state.lines]
        lines += [m for _, messages in self._archive._transcripts.values() for m in messages]
        for line in lines:
            if match(json.dumps(line, ensure_ascii=False)):
                changed += 1
                if not dry_run:
                    redacted = redact(line)
                    line.clear()
                    line.update(redacted)
        return changed

    def attached(self, key: str) -> bool:
        return key in self._attached

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        # Shared with every reopened handle, as another process's turn would be.
        async with self._turns.setdefault(key, asyncio.Lock()):
            yield


def _step(fault: FaultHook | None, name: str) -> None:
    if fault is not None:
        fault(name)
