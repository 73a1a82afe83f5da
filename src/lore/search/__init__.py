"""Search over everything Lore remembers: memories, notes and every archived message.

`searcher(lore)` is the runtime's one `LoreSearch`: it keeps the index in step (memories
through the m003 queue at every search, notes and the archive when their files change)
and answers queries (`lore.search.hybrid`). `index_after_turn` (the search feature's
hook) indexes what a turn wrote and embeds it in the background. Importing this package is
cheap; numpy and the model load on first use.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Protocol

from lore.errors import DatabaseUnavailable
from lore.health import HEALTH
from lore.metrics import METRICS

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from pathlib import Path

    from lore.clock import Clock
    from lore.config import Config
    from lore.core.background import Background
    from lore.core.feature import CompletedTurn
    from lore.events import Emit
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import NotesStore
    from lore.ports.search import SearchIndexPort
    from lore.ports.sessions import SessionStore
    from lore.search.hybrid import Fusion, Hit, Mode
    from lore.search.rerank import TimeSpan

__all__ = [
    "LoreSearch",
    "embed_backlog_forever",
    "format_hits",
    "index_after_turn",
    "search_when",
    "searcher",
]

_DAILY_NOTE = re.compile(r"(?:^|/)\d{4}-\d{2}-\d{2}\.md$")
# Notes and the archive are re-checked at most this often (a few stats each time).
_FILE_CHECK_SECONDS = 2.0
# Entries embedded per background run (about 10-30 ms each), so that a run that must
# finish before a one-shot command exits never takes long; the next run goes on.
log = logging.getLogger(__name__)

_EMBED_BATCH = 128
_NOT_MESSAGES = ("memory", "note")
# What one result line shows of its entry: enough to judge it, little enough that ten
# results cost the prompt about 700 tokens.
_LINE_CHARS = 220


class SearchServices(Protocol):
    """What search uses: the index, and what feeds it."""

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        """`job` on one worker at a time (see lore.core.services.Services)."""
        ...

    config: Config
    clock: Clock

    @property
    def zone(self) -> tzinfo: ...

    @property
    def background(self) -> Background: ...

    @property
    def memory(self) -> MemoryStore: ...

    @property
    def notes(self) -> NotesStore: ...

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def search_index(self) -> SearchIndexPort: ...


class LoreSearch:
    """The search index of one runtime, kept in step with memories, notes and the archive."""

    def __init__(self, lore: SearchServices) -> None:
        self._lore = lore
        self._lock = threading.Lock()
        self._files_checked = -float("inf")
        self._archive_seen: tuple[int, int] | None = None
        self._embedding: asyncio.Task[None] | None = None

    @property
    def index(self) -> SearchIndexPort:
        return self._lore.search_index

    def scopes_for(self, scope: str) -> list[str]:
        """What a conversation may search: its own scope, plus the owner's notes if it is
        one of the owner's."""
        from lore.search.sources import NOTES_SCOPE

        return [scope, NOTES_SCOPE] if self._lore.config.is_owner_scope(scope) else [scope]

    def refresh(self, *, files: bool | None = None) -> None:
        """Index what was written since the last call: queued memories always; notes and
        archived sessions when `files`, or (None) when last checked over 2 s ago."""
        from lore.search import sources

        with self._lock:
            index = self.index
            if index.has_queued_memories():
                sources.catch_up_memories(index, self._lore.memory)
            due = time.monotonic() - self._files_checked >= _FILE_CHECK_SECONDS
            if files or (files is None and due):
                self._files_checked = time.monotonic()
                workspace = self._lore.config.workspace
                if workspace.exists():
                    sources.sync_notes(index, workspace, self._lore.notes)
                archive = self._lore.sessions.archive
                # A closed or re-closed session always appends to the archive's index.
                seen = archive.stamp()
                if seen != self._archive_seen:
                    sources.sync_archive(index, archive, zone=self._lore.zone)
                    self._archive_seen = seen

    def index_live(self, scope: str) -> int:
        """Index what the live session of `scope` gained since the last call."""
        from lore.search import sources

        with self._lock:
            session = self._lore.sessions.live(scope)
            return sources.index_live(self.index, session, zone=self._lore.zone)

    def search(
        self,
        query: str,
        scope: str,
        *,
        limit: int = 10,
        mode: Mode = "hybrid",
        now: datetime | None = None,
        embed_first: int = 0,
        fusion: Fusion | None = None,
        after: float | None = None,
        before: float | None = None,
        about: TimeSpan | None = None,
    ) -> list[Hit]:
        """Search `scope` (and the owner's notes, for an owner scope). `embed_first` embeds up
        to that many waiting entries before searching: a one-shot command has no background
        to do it later."""
        from lore.search.hybrid import DEFAULT_FUSION, search

        started = time.monotonic()
        self.refresh()
        if embed_first and mode != "text":
            self.index.embed_pending(limit=embed_first)
        moment = now or self._lore.clock.now()
        hits = search(
            self.index,
            query,
            self.scopes_for(scope),
            now=moment,
            limit=limit,
            mode=mode,
            fusion=fusion or DEFAULT_FUSION,
            after=after,
            before=before,
            about=about,
        )
        found = _current_first(self.index, scope, hits)
        METRICS.count("lore_searches", mode=mode)
        METRICS.observe("lore_search_seconds", time.monotonic() - started, mode=mode)
        return found

    def embed_pending(self, limit: int | None = None, *, since: float | None = None) -> int:
        """Embed entries still without a vector (blocking; only those dated `since` or
        later); returns how many."""
        return self.index.embed_pending(limit=limit, since=since)

    def schedule_embedding(self, *, since: float | None = None) -> None:
        """Embed some pending entries (dated `since` or later) in the background, if an
        event loop is running and no such run is under way; in a one-shot process, only
        if a memory or note is among them (messages then go in the same batch)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a plain CLI call: a later turn, search or rebuild embeds them
        if self._embedding is not None and not self._embedding.done():
            return
        if self.index.pending_vectors() == 0:
            return
        if self._lore.background.one_shot and not self.index.pending_vectors(
            since=since, kinds=_NOT_MESSAGES
        ):
            # Loading the embedder would cost a one-shot process more than its turn: its
            # messages are found by text now, by meaning once `lore serve`, a later turn
            # that embeds or `lore index rebuild` gives them vectors.
            return

        async def job() -> None:
            await asyncio.to_thread(self.embed_pending, _EMBED_BATCH, since=since)

        self._embedding = self._lore.background.spawn(job, name="search-embed", key="search-embed")


_searchers: weakref.WeakKeyDictionary[SearchServices, LoreSearch] = weakref.WeakKeyDictionary()
_searchers_lock = threading.Lock()


def searcher(lore: SearchServices) -> LoreSearch:
    with _searchers_lock:
        found = _searchers.get(lore)
        if found is None:
            found = _searchers[lore] = LoreSearch(lore)
        return found


def search_when(
    lore: SearchServices, query: str, scope: str, *, when: str | None = None, limit: int = 10
) -> list[Hit]:
    """A program's search (REST, the Python API): the model's search over `scope`, within
    the span `when` names ("last week", "2026-05", "上个月"), after embedding what waits,
    as a one-shot command does. InvalidInputError for a `when` it cannot read."""
    from lore.search.timespan import time_range

    now = lore.clock.now()
    after, before, span = time_range(when=when, after=None, before=None, now=now, zone=lore.zone)
    return searcher(lore).search(
        query, scope, limit=limit, embed_first=256, now=now, after=after, before=before, about=span
    )


async def index_after_turn(lore: SearchServices, turn: CompletedTurn, emit: Emit) -> None:
    """Index what the turn wrote (its memories, notes, and its messages in the live
    session) and embed only what is that recent: a backlog (an
    import, a model change) is `lore serve`'s or `lore index rebuild`'s work, never a chat
    turn's. "Recent" starts at the previous turn, so memories extraction noted after that
    turn's indexing are embedded now."""
    found = searcher(lore)
    await asyncio.to_thread(found.refresh, files=True)
    await asyncio.to_thread(found.index_live, turn.scope)
    found.schedule_embedding(since=_previous_turn_start(lore, turn))


def _previous_turn_start(lore: SearchServices, turn: CompletedTurn) -> float:
    messages = lore.sessions.live(turn.scope).messages
    users = [m for m in messages[: turn.user_index] if m["role"] == "user"]
    stamp = (users[-1] if users else turn.messages[0]).get("timestamp")
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return lore.clock.now().timestamp() - 3600.0


async def embed_backlog_forever(lore: SearchServices, *, idle_seconds: float = 30.0) -> None:
    """`lore serve`'s share of the work: embed entries still without a vector, a batch at
    a time, so hybrid search covers everything again; sleep while there are none."""
    found = searcher(lore)
    while True:
        try:
            with lore.exclusive("embed-backlog", None) as free:  # one worker embeds at a time
                done = await asyncio.to_thread(found.embed_pending, _EMBED_BATCH) if free else 0
            HEALTH.backlog(await asyncio.to_thread(found.index.pending_vectors))
        except DatabaseUnavailable as exc:  # the next round, once it is back
            log.warning("embedding the search backlog waits for the database: %s", exc)
            done = 0
        if not done:
            await asyncio.sleep(idle_seconds)


def _current_first(index: SearchIndexPort, scope: str, hits: list[Hit]) -> list[Hit]:
    """A message whose memory was since superseded is labelled with the memory that holds
    the fact now, and ranks below it when both are found."""
    from dataclasses import replace

    marked: list[Hit] = []
    sessions: dict[str, dict[int, int]] = {}
    for hit in hits:
        entry = hit.entry
        if entry.kind == "message" and entry.scope == scope:
            if entry.source not in sessions:
                sessions[entry.source] = index.superseded_in(scope, entry.source)
            current = sessions[entry.source].get(entry.locator)
            if current is not None:
                hit = replace(hit, superseded_by=current)
        marked.append(hit)
    ordered: list[Hit] = []
    for hit in marked:
        if hit.superseded_by is not None:
            newer = [
                h
                for h in marked
                if h.entry.kind == "memory"
                and h.entry.locator == hit.superseded_by
                and h not in ordered
            ]
            ordered.extend(newer)
        if hit not in ordered:
            ordered.append(hit)
    return ordered


def _when(kind: str, source: str, at: float, zone: tzinfo) -> str:
    """A hit's time. A daily note (memory/2026-11-29.md) is dated by its name alone: it
    has a day but no time, so no invented 00:00 (or 08:00 in Taipei)."""
    if kind == "note" and _DAILY_NOTE.search(source):
        return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")
    return datetime.fromtimestamp(at, zone).strftime("%Y-%m-%d %H:%M")


def format_hits(hits: Sequence[Hit], query: str, zone: tzinfo) -> str:
    """Hits as one compact line each: number, when it was said, who said it (or which
    memory or note), the text around the match, and for a session message the call that
    reads it in context (session_history from two messages before it)."""
    from lore.search.hybrid import snippet

    lines = []
    for number, hit in enumerate(hits, 1):
        entry = hit.entry
        when = _when(entry.kind, entry.source, entry.at, zone)
        also = f" (+{len(hit.duplicates)} similar)" if hit.duplicates else ""
        if entry.kind == "message":
            text = " ".join(snippet(entry.display, query, _LINE_CHARS).split())
            offset = max(entry.locator - 2, 0)
            where = f' → session_history(session_id="{entry.source}", offset={offset})'
            old = "" if hit.superseded_by is None else f" (superseded by #{hit.superseded_by})"
            lines.append(f"[{number}] {when}{old} {text}{also}{where}")
        else:
            text = " ".join(snippet(entry.display, query, _LINE_CHARS).split())
            lines.append(f"[{number}] {when} {hit.label}: {text}{also}")
    return "\n".join(lines)
