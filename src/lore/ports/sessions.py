"""The sessions port: live sessions, their exact archive and its index.

Only a sessions store reads or writes the formats behind them. A live session is one
conversation's current transcript (append-only); closing it archives the exact
transcript, indexes it, then starts a fresh session under the same key. The suite in
tests/contract/test_sessions_contract.py holds every backend to this.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, tzinfo
from typing import Any, Protocol

from lore.errors import SessionError
from lore.llm.base import Message

__all__ = [
    "CLOSE_STEPS",
    "ArchivedSession",
    "ClosingArchive",
    "FaultHook",
    "LiveSession",
    "SessionArchive",
    "SessionMeta",
    "SessionStore",
    "close_in_steps",
    "finish_close",
]

FaultHook = Callable[[str], None]

# The steps of a close, in order; `close` calls its `fault` hook after each, so a test
# can stop it there (the transcript half-written, written, indexed, the session reset).
CLOSE_STEPS = ("archive_tmp_written", "archive_written", "index_written", "session_reset")


@dataclass
class SessionMeta:
    session_id: str
    key: str
    created_at: str
    updated_at: str
    last_consolidated: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionMeta:
        return cls(
            session_id=str(data["session_id"]),
            key=str(data["key"]),
            created_at=str(data.get("created_at", "")),
            updated_at=str(data.get("updated_at", "")),
            last_consolidated=int(data.get("last_consolidated", 0)),
            extra=dict(data.get("extra") or {}),
        )


@dataclass(frozen=True)
class ArchivedSession:
    """One closed session as the index describes it."""

    session_id: str
    key: str
    slug: str
    created_at: str
    updated_at: str
    ended_at: str
    message_count: int
    transcript_path: str  # relative to Lore's home
    memory_path: str | None = None  # summary (or raw digest) file, relative to home
    summary: str = "pending"  # pending | written | raw | skipped
    reason: str = "new"  # new | idle | import (brought from another assistant)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchivedSession:
        return cls(
            session_id=str(data["session_id"]),
            key=str(data["key"]),
            slug=str(data.get("slug") or "session"),
            created_at=str(data.get("created_at", "")),
            updated_at=str(data.get("updated_at", "")),
            ended_at=str(data.get("ended_at", "")),
            message_count=int(data.get("message_count", 0)),
            transcript_path=str(data["transcript_path"]),
            memory_path=data.get("memory_path") or None,
            summary=str(data.get("summary", "pending")),
            reason=str(data.get("reason", "new")),
        )


class Draft(Protocol):
    def write(self, text: str) -> None: ...

    @property
    def text(self) -> str: ...


class LiveSession(Protocol):
    """One conversation's live transcript. `refresh()` sees other writers' lines (and a
    reset done through another handle). Changing a message after appending it, or in
    `messages`, changes nothing stored."""

    key: str
    messages: list[Message]
    meta: SessionMeta

    def refresh(self) -> None: ...

    def append(self, messages: list[Message], *, touch: bool = True, durable: bool = True) -> None:
        """Append messages (one write) and bump `updated_at` (unless not `touch`). Durable:
        on disk when this returns; not `durable`: kept if the process dies, on disk with
        the next durable append."""

    def append_once(self, key: str, messages: list[Message]) -> bool:
        """Append unless a message carrying delivery key `key` is already in the session
        (checked under the same lock); False when it was."""

    def mark(self, index: int, **flags: Any) -> None:
        """Set flags on message `index` (cancelled, unanswered), append-only; every
        reader sees them merged into the message. An index past the end is ignored."""

    def draft(
        self, index: int, why: Callable[[], dict[str, Any]] | None = None
    ) -> AbstractContextManager[Draft]:
        """Where the reply being streamed for message `index` goes as it is shown; a crash
        leaves it for the next process to keep as an `interrupted` reply, with the `why`
        record (lore.core.provenance) the turn had when its first text was shown."""

    def update_meta(self, **changes: Any) -> None:
        """Set metadata fields; `extra` is merged into the existing extra, not replaced."""

    def reset(self, session_id: str | None = None) -> None:
        """Start a fresh transcript under the same key (after it was archived), under a
        new session id (or the one given)."""

    def locked(self) -> AbstractContextManager[None]:
        """Hold the session's write lock across several steps (re-entrant here)."""


class SessionArchive(Protocol):
    @property
    def index_location(self) -> str:
        """Where the index is, as the summary files name it."""

    def entries(self) -> list[ArchivedSession]:
        """Every indexed session, in the order they were (last) closed."""

    def get(self, session_id: str) -> ArchivedSession | None: ...

    def read_messages(
        self, entry: ArchivedSession, *, offset: int = 0, limit: int | None = None
    ) -> tuple[list[Message], int]:
        """Messages `offset`.. of the exact transcript (at most `limit`), and how many it
        holds; a SessionError when it is missing."""

    def link_summary(
        self, session_id: str, memory_path: str | None, slug: str, status: str
    ) -> None:
        """Point the entry at its summary (`summary` becomes `status`); its transcript
        path never changes. An unknown session is a SessionError."""

    def fingerprint(self, entry: ArchivedSession) -> tuple[int, int] | None:
        """Changes whenever the entry's transcript is written again (a re-close, a summary
        link); None when it is missing. The search index re-reads it only then."""

    def stamp(self) -> tuple[int, int] | None:
        """Changes whenever a session is archived or linked (the index re-syncs then)."""

    def metadata(self, entry: ArchivedSession) -> dict[str, Any]:
        """The live session's metadata kept with a transcript (last_consolidated, extra);
        {} when it has none."""

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
        """Store an exact transcript, whole or not at all, not indexed yet (a close, or a
        conversation imported from elsewhere, which never was a live session here)."""

    def append_index(self, entry: ArchivedSession) -> None:
        """Index a stored transcript, last in close order."""

    def remove(self, session_ids: list[str]) -> int:
        """Take these sessions out of the index and delete their transcripts, as one
        write (undoing an import); how many were there. Unknown ids are ignored, so
        running it again changes nothing; `stamp` changes when any was removed."""


class SessionStore(Protocol):
    @property
    def archive(self) -> SessionArchive: ...

    def live(self, key: str) -> LiveSession:
        """The live session of `key` (created empty when it has none), current as of this
        call. A store may hand out the same handle each time (refreshed), so what a
        caller changes in `messages` may be seen by later callers, never by the store."""

    def live_meta(self, key: str) -> SessionMeta | None:
        """The live session's metadata without creating or loading it (None when `key`
        has no live session)."""

    def live_keys(self) -> list[str]:
        """Every key that has a live session."""

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
        """Archive the session exactly, index it, then reset it, holding its lock
        throughout, calling `fault` after each of CLOSE_STEPS; None when it was empty
        (reset all the same for reason "new"). An "idle" close leaves the fresh session
        `previous_session_id` and `previous_transcript` in its extra. Closing a session
        again (it grew after a close stopped midway) rewrites the same transcript path,
        keeps the summary linked before and marks the summary pending."""

    def recover(self, *, min_age: float = 60.0) -> list[ArchivedSession]:
        """Finish what a crash during a close left, so that no message is both live and
        in an indexed archive, and running it again changes nothing: index a transcript
        whose session moved on; finish each live session's stopped close with
        `finish_close` (skipping a conversation with a turn under way: the next pass
        takes it); an unindexed archive the live session grew past is kept for its next
        close. Returns the closed sessions whose summary is still pending."""

    def attach(self, key: str) -> AbstractContextManager[bool]:
        """Mark `key` as shown live by this process (a terminal) while held; yields
        False when another holder (another process, or this one again) already shows it."""

    def attached(self, key: str) -> bool:
        """Is a process showing `key` live right now?"""

    def redact_messages(
        self, match: Callable[[str], bool], redact: Callable[[Any], Any], *, dry_run: bool = False
    ) -> int:
        """Forget everywhere: pass every stored message, mark, draft and archive entry
        whose JSON text `match`es through `redact` (a JSON value in, the same shape out);
        how many (would) change. A store keeping them as files under the home answers 0:
        forget everywhere rewrites those files itself."""

    def turn(self, key: str) -> AbstractAsyncContextManager[None]:
        """The conversation's one turn lock, held while a turn of `key` runs: every process
        and worker on this storage waits for it (a terminal beside `lore serve`, gateway
        workers behind a load balancer), another holder in this process included; other
        keys never wait. A holder that dies releases it."""


class ClosingArchive(Protocol):
    """What a close writes through: a store's archive, below the port."""

    def get(self, session_id: str) -> ArchivedSession | None: ...

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
        """Store the exact transcript, whole or not at all (not indexed yet); a session
        closed again keeps its transcript path. Calls `fault("archive_tmp_written")`."""

    def append_index(self, entry: ArchivedSession) -> None:
        """Index the stored transcript, last in close order, keeping an earlier summary
        link when the entry names none."""


def close_in_steps(
    archive: ClosingArchive,
    session: LiveSession,
    *,
    reason: str,
    ended_at: datetime,
    zone: tzinfo,
    slug: str,
    fault: FaultHook | None = None,
) -> ArchivedSession | None:
    """`SessionStore.close`, the same for every store: archive → index → reset under the
    session's lock, `fault` called after each of CLOSE_STEPS. Stopped at any step, every
    message is in the live session or a stored transcript; `recover` finishes the rest."""
    with session.locked():
        session.refresh()
        if not session.messages:
            if reason == "new":
                session.reset()
            return None
        meta = replace(session.meta, extra=dict(session.meta.extra))
        messages = list(session.messages)
        indexed = archive.get(meta.session_id)
        if indexed is not None and indexed.message_count == len(messages):
            entry = indexed  # a close that stopped after indexing: only the reset is left
        else:
            entry = archive.write_transcript(
                meta,
                messages,
                ended_at=ended_at,
                zone=zone,
                slug=slug,
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
            raise SessionError(f"session {session.key} changed while locked")
        _start_after(session, entry, reason)
    _step(fault, "session_reset")
    return entry


def finish_close(archive: ClosingArchive, session: LiveSession, written: ArchivedSession) -> bool:
    """What `recover` does for a live session whose transcript a stopped close stored
    (`written`: the transcript as last stored, which may be newer than the index says),
    so that no message is left both live and in an indexed archive:

    - the live session holds exactly the transcript: index it (again, when the index
      names an older count) and start the session afresh, as the close would have;
    - the session grew since and the transcript is indexed (readers see it): the archive
      keeps the messages it holds, the session starts afresh with the ones that came
      after (their order, times and flags kept);
    - the session grew since and nothing is indexed: left for its next close, which
      rewrites the transcript whole (nobody reads it meanwhile).

    The caller makes sure no turn is under way in the conversation (the messages after the
    transcript move). Running it again changes nothing. True when the session moved on."""
    with session.locked():
        session.refresh()
        if session.meta.session_id != written.session_id:
            return False
        messages = list(session.messages)
        stored = written.message_count
        indexed = archive.get(written.session_id)
        if len(messages) < stored or (len(messages) > stored and indexed is None):
            return False
        if indexed is None or indexed.message_count != stored:
            archive.append_index(written)
        updated_at, consolidated = session.meta.updated_at, session.meta.last_consolidated
        _start_after(session, written, written.reason)
        if len(messages) > stored:
            session.append(messages[stored:], touch=False)
            session.update_meta(
                updated_at=updated_at, last_consolidated=max(0, consolidated - stored)
            )
    return True


def _start_after(session: LiveSession, entry: ArchivedSession, reason: str) -> None:
    """Start the session afresh once `entry` holds its messages; after an idle close the
    fresh session points back at the one it follows."""
    session.reset()
    if reason == "idle":
        session.update_meta(
            extra={
                "previous_session_id": entry.session_id,
                "previous_transcript": entry.transcript_path,
            }
        )


def _step(fault: FaultHook | None, name: str) -> None:
    if fault is not None:
        fault(name)
