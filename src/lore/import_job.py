"""One import from start to end, as `lore import` and `POST /api/import` both run it: read
and check the export, plan what is new, write it (sessions, notes, memories), then index
the new sessions for search. And its undo, search entries included."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lore.errors import InvalidInputError
from lore.sessions.export_formats import read_export
from lore.sessions.importing import (
    ImportLedger,
    ImportPlan,
    ImportRecord,
    apply_import,
    plan_import,
    undo_import,
)

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["ImportDone", "Undone", "import_ledger", "parse_since", "run_import", "run_undo"]


class Bar(Protocol):
    """A progress bar (lore.search.rebuild.Progress): one step done; finished."""

    def advance(self, count: int = 1) -> None: ...

    def close(self) -> None: ...


Progress = Callable[[str, int], Bar]  # (what, total): the bar of that step


@dataclass(frozen=True)
class ImportDone:
    plan: ImportPlan
    record: ImportRecord | None  # None for a dry run

    @property
    def written(self) -> int:
        return len(self.plan.conversations) + len(self.plan.notes)

    def to_dict(self) -> dict[str, object]:
        made = {"memories_new": 0 if self.record is None else self.record.memories}
        found = self.record is not None and self.written
        return {
            "id": self.record.id if found and self.record else None,
            "dry_run": self.record is None,
            **self.plan.summary(),
            **made,
        }


@dataclass(frozen=True)
class Undone:
    record: ImportRecord
    sessions: int
    notes: int
    memories: int


def parse_since(text: str | None, zone: tzinfo) -> datetime | None:
    """`--since` / `since`: a day or an ISO 8601 time (in `zone` when it names none)."""
    if text is None or not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInputError(f"since {text!r}: use YYYY-MM-DD or ISO 8601") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


def import_ledger(lore: Services) -> ImportLedger:
    return ImportLedger(lore.config.home / "imports")


def run_import(
    lore: Services,
    source: str,
    path: Path,
    *,
    scope: str,
    since: datetime | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportDone:
    """Import the export at `path` into `scope` (an InvalidInputError, nothing written,
    when it cannot be read); `progress(what, total)` gives the step's advance."""
    export = read_export(source, path)
    ledger = import_ledger(lore)
    plan = plan_import(
        export, ledger, sessions=lore.sessions, workspace=lore.config.workspace, since=since
    )
    if dry_run:
        return ImportDone(plan, None)
    total = len(plan.conversations) + len(plan.notes)
    bar = progress("importing", total) if progress else None
    record = apply_import(
        plan,
        sessions=lore.sessions,
        notes=lore.notes,
        notes_root=lore.config.workspace,
        ledger=ledger,
        scope=scope,
        zone=lore.zone,
        clock=lore.clock.now,
        memory=lore.memory,
        author=lore.config.user_name,
        progress=bar.advance if bar else None,
    )
    if bar:
        bar.close()
    _index(lore, [item["session_id"] for item in record.sessions], progress)
    return ImportDone(plan, record)


def run_undo(lore: Services, import_id: str) -> Undone:
    """Undo the import `import_id` names (its first characters do), search included."""
    from lore.search import searcher

    ledger = import_ledger(lore)
    record = ledger.get(import_id)
    sessions, notes, memories = undo_import(
        record,
        sessions=lore.sessions,
        notes=lore.notes,
        workspace=lore.config.workspace,
        ledger=ledger,
        now=lore.clock.now(),
        memory=lore.memory,
        by=lore.config.user_name,
    )
    search = searcher(lore)
    for item in record.sessions:
        search.index.remove_source("message", item["session_id"])
    search.refresh(files=True)
    return Undone(record, sessions, notes, memories)


def _index(lore: Services, session_ids: list[str], progress: Progress | None) -> None:
    """The imported sessions searchable by their words now (the slow part of a large
    import), by their meaning once `lore serve` embeds them."""
    from lore.search import searcher, sources

    search = searcher(lore)
    archive = lore.sessions.archive
    wanted = set(session_ids)
    entries = [entry for entry in archive.entries() if entry.session_id in wanted]
    bar = progress("indexing", len(entries)) if progress else None
    for entry in entries:
        sources.index_session(search.index, archive, entry, zone=lore.zone)
        if bar:
            bar.advance()
    if bar:
        bar.close()
    search.refresh(files=True)  # the notes, and anything else written meanwhile
