"""What the web page's "Import history" card shows (lore.channels.http.web_imports has
its routes): the sources, the last upload's result or refusal, and each import with its
extraction's offer, state and progress."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lore.import_extraction import estimate, extractor
from lore.import_job import ImportDone, import_ledger
from lore.sessions.export_formats import SOURCES
from lore.sessions.importing import ImportRecord
from lore.text import counted

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["imports_context"]


def imports_context(
    lore: Runtime, *, done: ImportDone | None = None, error: str = ""
) -> dict[str, Any]:
    """What the card shows: the sources, the last upload's result or refusal, and each
    import, newest first."""
    model = extractor(lore) is not None
    records = list(reversed(import_ledger(lore).records()))
    return {
        "sources": SOURCES,
        "upload_mb": lore.config.api.max_upload_mb,
        "import_result": done.to_dict() if done is not None else None,
        "import_error": error,
        "imports": [_row(lore, record, model) for record in records],
    }


def _row(lore: Runtime, record: ImportRecord, model: bool) -> dict[str, Any]:
    made = counted(len(record.sessions), "session") + ", " + counted(len(record.notes), "note")
    if record.memories:
        made += ", " + counted(record.memories, "memory", "memories")
    job = record.extraction
    state = job.get("state")
    row: dict[str, Any] = {
        "id": record.id,
        "source": record.source,
        "started_at": record.started_at,
        "made": made,
        "undone_at": record.undone_at,
        "finished": record.finished_at is not None,
        "extraction": state,
        "done": len(job.get("done", ())),
        "noted": int(job.get("notes", 0)),
        "offer": None,
    }
    if record.undone_at is None and record.sessions and model and state != "done":
        guess = estimate(lore, record)
        row["total"] = guess.conversations + row["done"]
        if guess.exchanges:
            row["offer"] = (
                f"sends your side of {counted(guess.conversations, 'conversation')}, "
                f"about {guess.tokens:,} tokens, to {guess.model or lore.config.model}"
            )
    return row
