"""Lore's memory inside another program: `Memory` (and `AsyncMemory`) over one home or
database, running the assistant's own code through `lore.runtime.build`.

    with Memory(home="~/.local/share/my-agent") as memory:
        memory.add("I moved to Lisbon last spring", scope="api:alice")
        hits = memory.search("where does Alice live?", scope="api:alice")

Every method is also on `lore.Client`, which does the same against `lore serve`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from lore.errors import InvalidInputError
from lore.records import (
    Added,
    Forgotten,
    HistoryEntry,
    MemoryBlock,
    MemoryRecord,
    ReminderRecord,
    SearchHit,
)
from lore.records import memory_id as checked_id

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterable

    from lore.clock import Clock
    from lore.config import Config
    from lore.embed import Embedder
    from lore.llm.base import Provider
    from lore.memory.intake import Said
    from lore.runtime import Runtime

__all__ = ["DEFAULT_SCOPE", "AsyncMemory", "Memory"]

DEFAULT_SCOPE = "api:default"  # the scope `lore serve` gives the owner's token
_T = TypeVar("_T")


class AsyncMemory:
    """Lore's memory of one home (or database) as coroutines; the store's work runs in a
    worker thread, as `lore serve` runs it, so the caller's event loop keeps serving.

    Give `home`, or `database_url` (PostgreSQL), or a whole `config`; `provider` is the
    model for extraction (default: the configured one), `scope` the conversation a call
    that names none uses. Close it (`async with`, or `aclose()`) when done."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        database_url: str | None = None,
        config: Config | None = None,
        scope: str = DEFAULT_SCOPE,
        provider: Provider | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        from lore.keys import conversation_key
        from lore.runtime import build

        if config is not None and (home is not None or database_url is not None):
            raise InvalidInputError("give a config, or a home and a database_url, not both")
        if config is None:
            from lore.config import load_config

            flags: dict[str, Any] = {"database_url": database_url}
            if home is not None:
                flags["home"] = Path(home).expanduser().resolve()
            config = load_config(flags=flags)
        self.scope = conversation_key(scope)
        self._lore: Runtime = build(config, provider=provider, clock=clock, embedder=embedder)

    @property
    def runtime(self) -> Runtime:
        """The runtime underneath (the same one `lore chat` and `lore serve` build)."""
        return self._lore

    def _scope(self, scope: str | None) -> str:
        from lore.keys import conversation_key

        return self.scope if scope is None else conversation_key(scope)

    def _author(self, author: str | None) -> str:
        if author is None:
            return self._lore.config.user_name
        if not author.strip():
            raise InvalidInputError("an author cannot be empty")
        return author.strip()

    async def add(
        self, said: Said, *, scope: str | None = None, author: str | None = None
    ) -> Added:
        """Add what was said (a text, or chat messages): the configured model extracts
        memories from it as after a turn (new facts, corrections, deletions); without
        a model, the text is kept as one memory."""
        from lore.memory.intake import add_said

        where, who = self._scope(scope), self._author(author)
        intake = await add_said(self._lore, where, said, author=who, via="api")
        record = await asyncio.to_thread(intake.record, self._lore.memory, where)
        return Added.from_dict(record)

    async def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        author: str | None = None,
        kind: str = "fact",
        keywords: Iterable[str] = (),
    ) -> MemoryRecord:
        """Note one fact as given (≤ 500 characters; nothing that looks secret); an exact
        duplicate returns the memory already there."""
        where, who = self._scope(scope), self._author(author)
        lore = self._lore
        memory, _ = await asyncio.to_thread(
            lore.memory.remember,
            where,
            text,
            kind=kind,
            keywords=tuple(keywords),
            author=who,
            via="api",
            now=lore.clock.now(),
        )
        return MemoryRecord.from_dict(memory.to_record())

    async def forget(
        self,
        memory_id: int | None = None,
        *,
        phrase: str | None = None,
        scope: str | None = None,
        everywhere: bool = False,
    ) -> Forgotten:
        """Erase a memory (by id, or the one memory holding `phrase`) and its earlier
        versions; with `everywhere`, every copy under the home too (transcripts, notes,
        their git history, the index, logs), as `lore forget --everywhere` does."""
        from lore.memory.intake import forget_named

        if memory_id is not None:
            memory_id = checked_id(memory_id)
        where, who = self._scope(scope), self._lore.config.user_name
        found = await asyncio.to_thread(
            forget_named,
            self._lore,
            where,
            memory_id,
            phrase=phrase,
            everywhere=everywhere,
            by=who,
            via="api",
        )
        return Forgotten.from_dict(found)

    async def search(
        self, query: str, *, scope: str | None = None, when: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Memories, notes and archived messages matching `query` by words and meaning,
        best first (the model's memory_search); `when` ("last week", "2026-05", "上个月")
        keeps what was said then."""
        if not query.strip():
            raise InvalidInputError("a search needs some words")
        if not 1 <= limit <= 100:
            raise InvalidInputError(f"limit must be between 1 and 100, not {limit}")
        where = self._scope(scope)
        return await asyncio.to_thread(self._search, query, where, when, limit)

    def _search(self, query: str, scope: str, when: str | None, limit: int) -> list[SearchHit]:
        from lore.search import search_when

        hits = search_when(self._lore, query, scope, when=when, limit=limit)
        return [SearchHit.from_dict(hit.to_dict(query)) for hit in hits]

    async def block(self, scope: str | None = None) -> MemoryBlock:
        """The memory block exactly as the model sees it in the scope's next turn."""
        return await asyncio.to_thread(self._block, self._scope(scope))

    def _block(self, scope: str) -> MemoryBlock:
        from lore.memory.block import scope_block

        block = scope_block(self._lore, scope, now=self._lore.clock.now())
        return MemoryBlock(block.text, tuple(sorted(block.shown_ids)), block.hidden_count)

    async def history(self, memory_id: int, *, scope: str | None = None) -> list[HistoryEntry]:
        """Every change to the memory's chain of versions, oldest first."""
        where, checked = self._scope(scope), checked_id(memory_id)
        found = await asyncio.to_thread(self._lore.memory.history, where, checked)
        return [
            HistoryEntry(e.id, e.memory_id, e.action, e.actor, e.via, e.at, e.detail) for e in found
        ]

    async def reminders(
        self, scope: str | None = None, *, include_done: bool = False
    ) -> list[ReminderRecord]:
        """The scope's reminders, soonest first (with `include_done`, finished ones too)."""
        return await asyncio.to_thread(self._reminders, self._scope(scope), include_done)

    def _reminders(self, scope: str, include_done: bool) -> list[ReminderRecord]:
        from lore.reminders import describe_reminder

        lore = self._lore
        now = lore.clock.now()
        return [
            ReminderRecord.from_dict({**r.to_dict(), "description": describe_reminder(r, now)})
            for r in lore.reminders.list(scope, include_done=include_done)
        ]

    async def aclose(self) -> None:
        """Finish background work (the search index's embedding) and close the stores."""
        await self._lore.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()


class Memory:
    """Lore's memory of one home (or database), called from ordinary code: the same
    methods as `AsyncMemory`, each run to its end on an event loop this object keeps.
    Use it with `with`, or call `close()`; inside a running event loop, use AsyncMemory."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        database_url: str | None = None,
        config: Config | None = None,
        scope: str = DEFAULT_SCOPE,
        provider: Provider | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._memory = AsyncMemory(
            home,
            database_url=database_url,
            config=config,
            scope=scope,
            provider=provider,
            clock=clock,
            embedder=embedder,
        )
        # One loop for the object's life: the model's HTTP client stays on one loop. Made
        # by a factory, it is not set as the thread's event loop, where a framework's own
        # run_sync (pydantic-ai's) would find it and run on it.
        self._runner = asyncio.Runner(loop_factory=asyncio.new_event_loop)

    @property
    def scope(self) -> str:
        return self._memory.scope

    @property
    def runtime(self) -> Runtime:
        return self._memory.runtime

    def _run(self, work: Coroutine[Any, Any, _T]) -> _T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._runner.run(work)
        work.close()
        raise InvalidInputError("inside async code, use lore.AsyncMemory (lore.Memory blocks)")

    def add(self, said: Said, *, scope: str | None = None, author: str | None = None) -> Added:
        return self._run(self._memory.add(said, scope=scope, author=author))

    add.__doc__ = AsyncMemory.add.__doc__

    def remember(
        self,
        text: str,
        *,
        scope: str | None = None,
        author: str | None = None,
        kind: str = "fact",
        keywords: Iterable[str] = (),
    ) -> MemoryRecord:
        return self._run(
            self._memory.remember(text, scope=scope, author=author, kind=kind, keywords=keywords)
        )

    remember.__doc__ = AsyncMemory.remember.__doc__

    def forget(
        self,
        memory_id: int | None = None,
        *,
        phrase: str | None = None,
        scope: str | None = None,
        everywhere: bool = False,
    ) -> Forgotten:
        return self._run(
            self._memory.forget(memory_id, phrase=phrase, scope=scope, everywhere=everywhere)
        )

    forget.__doc__ = AsyncMemory.forget.__doc__

    def search(
        self, query: str, *, scope: str | None = None, when: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        return self._run(self._memory.search(query, scope=scope, when=when, limit=limit))

    search.__doc__ = AsyncMemory.search.__doc__

    def block(self, scope: str | None = None) -> MemoryBlock:
        return self._run(self._memory.block(scope))

    block.__doc__ = AsyncMemory.block.__doc__

    def history(self, memory_id: int, *, scope: str | None = None) -> list[HistoryEntry]:
        return self._run(self._memory.history(memory_id, scope=scope))

    history.__doc__ = AsyncMemory.history.__doc__

    def reminders(
        self, scope: str | None = None, *, include_done: bool = False
    ) -> list[ReminderRecord]:
        return self._run(self._memory.reminders(scope, include_done=include_done))

    reminders.__doc__ = AsyncMemory.reminders.__doc__

    def close(self) -> None:
        """Finish background work and close the stores; the object cannot be used after."""
        try:
            self._run(self._memory.aclose())
        finally:
            self._runner.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
