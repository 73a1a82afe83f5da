"""`lore index rebuild`: recreate the search index from the memories, files and archive.

The index is derived data: dropping it loses nothing. A rebuild empties it, re-reads
every active memory, MEMORY.md and memory/*.md, and every archived session, then embeds
everything (the slow part: about 10 ms an entry on one core), with a progress bar.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["Progress", "RebuildReport", "rebuild"]


class Progress:
    """A one-line progress bar on a terminal; silent when `stream` is not one."""

    def __init__(self, total: int, label: str, *, stream: TextIO | None = None) -> None:
        self.total = max(total, 0)
        self.label = label
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._live = self._stream.isatty()
        self._started = time.monotonic()
        self._shown = 0.0

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if self._live and (now - self._shown >= 0.1 or self.done >= self.total):
            self._shown = now
            self._draw()

    def close(self) -> None:
        if self._live:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self) -> None:
        width = 30
        share = self.done / self.total if self.total else 1.0
        bar = "█" * int(share * width) + "·" * (width - int(share * width))
        elapsed = time.monotonic() - self._started
        self._stream.write(f"\r{self.label} {bar} {self.done}/{self.total} ({elapsed:.0f}s)")
        self._stream.flush()


@dataclass(frozen=True)
class RebuildReport:
    memories: int
    note_files: int
    sessions: int
    entries: int
    embedded: int
    seconds: float


def rebuild(lore: Services, *, vectors: bool = True, stream: TextIO | None = None) -> RebuildReport:
    """Empty the index and fill it again from the memories table, the notes and the archive."""
    from lore.search import searcher, sources

    started = time.monotonic()
    index = searcher(lore).index
    index.clear(requeue_memories=True)
    sources.catch_up_memories(index, lore.memory)
    if lore.config.workspace.exists():
        sources.sync_notes(index, lore.config.workspace, lore.notes)
    sources.sync_archive(index, lore.sessions.archive, zone=lore.zone)
    stats = index.stats()
    entries = sum(stats.entries.values())
    embedded = 0
    if vectors:
        progress = Progress(index.pending_vectors(), "embedding", stream=stream)
        embedded = index.embed_pending(batch=32, progress=progress.advance)
        progress.close()
    return RebuildReport(
        stats.sources["memory"],
        stats.sources["note"],
        stats.sources["message"],
        entries,
        embedded,
        time.monotonic() - started,
    )
