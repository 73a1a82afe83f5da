"""Importing another assistant's history: each conversation becomes an archived session
(its own times, title and source in its metadata), each Markdown note a note under
memory/imported/, each fact another agent kept (mem0, nanobot) a memory whose source is
its message in the archived session, and every import is recorded so it can be undone
as one operation.

The export is read and checked whole before anything is written (lore.sessions.
export_formats). An import's record (`imports/<id>.json` under Lore's home) is written
first, naming every session id it will create, so an import stopped part-way can still
be undone; it lists the content hash of each conversation and note, and a conversation
or note whose hash an import already holds is not imported again.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import InvalidInputError
from lore.files import atomic_write
from lore.ports.memories import Source
from lore.ports.sessions import ArchivedSession, SessionMeta
from lore.sessions.export_records import Conversation, Export, ImportedNote, aware_time
from lore.text import slugify

if TYPE_CHECKING:
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import NotesStore
    from lore.ports.sessions import SessionArchive, SessionStore

__all__ = [
    "IMPORTED_NOTES",
    "ImportLedger",
    "ImportPlan",
    "ImportRecord",
    "apply_import",
    "plan_import",
    "undo_import",
]

IMPORTED_NOTES = "imported"  # notes go to memory/imported/<their path in the folder>
REASON = "import"  # an archived session's `reason` when it was imported


@dataclass
class ImportPlan:
    """What an import would add, and what it leaves out with the reason."""

    export: Export
    conversations: list[Conversation]
    notes: list[ImportedNote]
    already_imported: int
    older: int  # before --since

    @property
    def messages(self) -> int:
        return sum(len(c.messages) for c in self.conversations if not c.facts)

    @property
    def facts(self) -> int:
        return sum(len(c.messages) for c in self.conversations if c.facts)

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.export.source,
            "path": self.export.path,
            "conversations": sum(not c.facts for c in self.conversations),
            "messages": self.messages,
            "memories": self.facts,
            "notes": len(self.notes),
            "already_imported": self.already_imported,
            "before_since": self.older,
            "skipped": [{"item": s.item, "reason": s.reason} for s in self.export.skipped],
            "titles": [c.title or "(untitled)" for c in self.conversations]
            + [n.relative for n in self.notes],
        }


@dataclass
class ImportRecord:
    """One import as recorded: what it created, so `lore import undo ID` can remove it."""

    id: str
    source: str
    path: str
    scope: str
    started_at: str
    finished_at: str | None = None
    sessions: list[dict[str, str]] = field(default_factory=list)  # session_id, title, hash
    notes: list[dict[str, str]] = field(default_factory=list)  # path, hash
    skipped: list[dict[str, str]] = field(default_factory=list)
    already_imported: int = 0
    undone_at: str | None = None  # kept, undone, so the list shows what happened
    number: int = 0  # 1 for the home's first import, and so on: the order they were made
    memories: int = 0  # made from the facts, new (a fact Lore held already adds none)
    # Memories from the conversations, by the model, once agreed to (lore.import_extraction):
    # {"state": "queued" | "paused" | "done", "done": [session ids], "notes": count}.
    extraction: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "path": self.path,
            "scope": self.scope,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "sessions": self.sessions,
            "notes": self.notes,
            "skipped": self.skipped,
            "already_imported": self.already_imported,
            "undone_at": self.undone_at,
            "number": self.number,
            "memories": self.memories,
            "extraction": self.extraction,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImportRecord:
        return cls(
            id=str(data["id"]),
            source=str(data["source"]),
            path=str(data.get("path", "")),
            scope=str(data.get("scope", "")),
            started_at=str(data.get("started_at", "")),
            finished_at=data.get("finished_at"),
            sessions=list(data.get("sessions") or []),
            notes=list(data.get("notes") or []),
            skipped=list(data.get("skipped") or []),
            already_imported=int(data.get("already_imported", 0)),
            undone_at=data.get("undone_at"),
            number=int(data.get("number", 0)),
            memories=int(data.get("memories", 0)),
            extraction=dict(data.get("extraction") or {}),
        )


class ImportLedger:
    """The records of past imports, one JSON file each under `imports/`."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def records(self) -> list[ImportRecord]:
        found = []
        for path in sorted(self.dir.glob("*.json")) if self.dir.exists() else []:
            try:
                found.append(ImportRecord.from_dict(json.loads(path.read_bytes())))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a record that cannot be read names nothing to skip or undo
        return sorted(found, key=lambda r: (r.number, r.started_at))

    def get(self, import_id: str) -> ImportRecord:
        wanted = import_id.strip().lower()
        matches = [r for r in self.records() if wanted and r.id.startswith(wanted)]
        if len(matches) != 1:
            what = "no" if not matches else "more than one"
            raise InvalidInputError(
                f"{what} import {import_id!r}; see `lore import list` for the imports made"
            )
        return matches[0]

    def save(self, record: ImportRecord) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        data = json.dumps(record.to_dict(), ensure_ascii=False, indent=1).encode("utf-8")
        atomic_write(self.dir / f"{record.id}.json", data + b"\n")

    def known_hashes(self, archived: set[str], workspace: Path) -> set[str]:
        """The content hashes imports brought in and did not undo. Of an import stopped
        part-way only what it wrote counts (`archived`: the session ids the archive
        holds), so importing again brings in the rest."""
        known = set()
        for record in self.records():
            if record.undone_at is not None:
                continue
            done = record.finished_at is not None
            known |= {
                item["hash"] for item in record.sessions if done or item["session_id"] in archived
            }
            known |= {
                item["hash"]
                for item in record.notes
                if done or _unchanged(workspace / item["path"], item)
            }
        return known


def plan_import(
    export: Export,
    ledger: ImportLedger,
    *,
    sessions: SessionStore,
    workspace: Path,
    since: datetime | None = None,
) -> ImportPlan:
    """What importing `export` would add: what no earlier import holds, from `since` on."""
    archived = {entry.session_id for entry in sessions.archive.entries()}
    known = ledger.known_hashes(archived, workspace)
    plan = ImportPlan(export, [], [], 0, 0)
    for conversation in export.conversations:
        if since is not None and conversation.updated_at < since:
            plan.older += 1
        elif conversation.content_hash in known:
            plan.already_imported += 1
        else:
            known.add(conversation.content_hash)  # the same conversation twice in one file
            plan.conversations.append(conversation)
    for note in export.notes:
        if since is not None and note.modified_at < since:
            plan.older += 1
        elif note.content_hash in known:
            plan.already_imported += 1
        else:
            known.add(note.content_hash)
            plan.notes.append(note)
    return plan


def apply_import(
    plan: ImportPlan,
    *,
    sessions: SessionStore,
    notes: NotesStore,
    notes_root: Path,
    ledger: ImportLedger,
    scope: str,
    zone: tzinfo,
    clock: Callable[[], datetime],
    memory: MemoryStore | None = None,
    author: str = "",
    progress: Callable[[int], None] | None = None,
) -> ImportRecord:
    """Write what `plan` holds and record it; `progress(1)` after each item. `notes_root`
    is the workspace the notes' paths are relative to; the facts become memories in
    `memory` (said by `author`), each with its archived message as its source."""
    if plan.facts and (memory is None or not author):
        raise ValueError("an import of facts needs the memory store and the author")
    started = clock().isoformat(timespec="seconds")
    hashes = [c.content_hash for c in plan.conversations] + [n.content_hash for n in plan.notes]
    number = max((r.number for r in ledger.records()), default=0) + 1
    record = ImportRecord(
        # Named by its place in the home's imports and what it brings: ids never repeat.
        id=_import_id(number, started, plan.export.source, hashes),
        number=number,
        source=plan.export.source,
        path=plan.export.path,
        scope=scope,
        started_at=started,
        sessions=[
            {"session_id": uuid.uuid4().hex, "title": c.title, "hash": c.content_hash}
            for c in plan.conversations
        ],
        notes=[
            {"path": f"memory/{_note_stem(n)}.md", "relative": n.relative, "hash": n.content_hash}
            for n in plan.notes
        ],
        skipped=[{"item": s.item, "reason": s.reason} for s in plan.export.skipped],
        already_imported=plan.already_imported,
    )
    if not record.sessions and not record.notes:
        return record  # nothing new: nothing to record or undo
    ledger.save(record)  # before any write: an import stopped part-way can be undone
    archive = sessions.archive
    for planned, conversation in zip(record.sessions, plan.conversations, strict=True):
        _archive_conversation(archive, conversation, planned["session_id"], record, scope, zone)
        if conversation.facts and memory is not None:
            record.memories += _remember(memory, conversation, planned["session_id"], scope, author)
        if progress is not None:
            progress(1)
    for planned, note in zip(record.notes, plan.notes, strict=True):
        written = notes.create(_note_stem(note), note.text, scope=scope, at=note.modified_at)
        planned["path"] = written.path
        # The note keeps the date it had in the folder (search dates a note by its file).
        stamp = note.modified_at.timestamp()
        os.utime(notes_root / written.path, (stamp, stamp))
        if progress is not None:
            progress(1)
    record.finished_at = clock().isoformat(timespec="seconds")
    ledger.save(record)
    return record


def undo_import(
    record: ImportRecord,
    *,
    sessions: SessionStore,
    notes: NotesStore,
    workspace: Path,
    ledger: ImportLedger,
    now: datetime,
    memory: MemoryStore | None = None,
    by: str = "",
) -> tuple[int, int, int]:
    """Remove what the import created, then mark its record undone (what it brought can
    be imported again); (sessions, notes, memories) removed. A memory made from an
    imported fact and corrected since is the user's now: its new version stays. Stopped
    part-way, running it again finishes the rest."""
    if record.undone_at is not None:
        raise InvalidInputError(f"import {record.id} was undone already ({record.undone_at})")
    ids = {item["session_id"] for item in record.sessions}
    forgotten = 0 if memory is None else _forget_made(memory, record.scope, ids, now, by)
    removed = sessions.archive.remove([item["session_id"] for item in record.sessions])
    files = 0
    for item in record.notes:
        path = workspace / item["path"]
        if _is_imported_note(workspace, path) and _unchanged(path, item):
            notes.delete(item["path"])
            files += 1
            _prune_empty(path.parent, workspace / "memory" / IMPORTED_NOTES)
    record.undone_at = now.isoformat(timespec="seconds")
    ledger.save(record)
    return removed, files, forgotten


def session_source(metadata: dict[str, Any]) -> tuple[str, str]:
    """(title, source) an imported session's metadata records; ("", "") otherwise."""
    extra = metadata.get("extra")
    if not isinstance(extra, dict):
        return "", ""
    return str(extra.get("title") or ""), str(extra.get("source") or "")


def _archive_conversation(
    archive: SessionArchive,
    conversation: Conversation,
    session_id: str,
    record: ImportRecord,
    scope: str,
    zone: tzinfo,
) -> ArchivedSession:
    meta = SessionMeta(
        session_id=session_id,
        key=scope,
        created_at=conversation.created_at.isoformat(timespec="seconds"),
        updated_at=conversation.updated_at.isoformat(timespec="seconds"),
        extra={
            "title": conversation.title,
            "source": conversation.source,
            "facts": conversation.facts,
            "imported": {
                "import_id": record.id,
                "hash": conversation.content_hash,
                "external_id": conversation.external_id,
                "from": record.path,
            },
        },
    )
    slug = slugify(conversation.title, fallback=conversation.source)
    entry = archive.write_transcript(
        meta,
        conversation.messages,
        ended_at=conversation.updated_at,
        zone=zone,
        slug=slug,
        reason=REASON,
        fault=None,
    )
    # No summary is written for history brought from elsewhere (that would send every
    # conversation to the model): extraction from imports is a separate, consented step.
    entry = replace(entry, summary="skipped")
    archive.append_index(entry)
    return entry


def _remember(
    memory: MemoryStore, conversation: Conversation, session_id: str, scope: str, author: str
) -> int:
    """Each fact a memory, dated when the other agent made it; the new ones counted."""
    made = 0
    with memory.batch():
        for index, fact in enumerate(conversation.messages):
            when = aware_time(fact.get("timestamp")) or conversation.updated_at
            _, new = memory.remember(
                scope,
                str(fact["content"]),
                author=author,
                via="import",
                now=when,
                source=Source(session_id, index),
            )
            made += new
    return made


def _forget_made(
    memory: MemoryStore, scope: str, session_ids: set[str], now: datetime, by: str
) -> int:
    """Forget the memories whose source is one of these sessions (the import's facts)."""
    made = [
        m.id
        for m in memory.active(scope, now=now)
        if m.source is not None and m.source.session_id in session_ids
    ]
    with memory.batch():
        for memory_id in made:
            memory.forget(scope, memory_id, by=by or "import", via="import", now=now)
    return len(made)


def _import_id(number: int, started: str, source: str, hashes: list[str]) -> str:
    return hashlib.sha256(repr((number, started, source, hashes)).encode()).hexdigest()[:12]


def _unchanged(path: Path, item: dict[str, str]) -> bool:
    """Is the file still the note this import wrote? Another note at the same path (an
    earlier import's) or one edited since is left where it is."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    written = ImportedNote(item.get("relative", ""), text, datetime.fromtimestamp(0, UTC))
    return written.content_hash == item["hash"]


def _note_stem(note: ImportedNote) -> str:
    return f"{IMPORTED_NOTES}/{note.relative.removesuffix('.md')}"


def _is_imported_note(workspace: Path, path: Path) -> bool:
    root = (workspace / "memory" / IMPORTED_NOTES).resolve()
    return path.resolve().is_relative_to(root) and path.suffix == ".md"


def _prune_empty(folder: Path, root: Path) -> None:
    while folder.is_relative_to(root):  # memory/imported/ itself too, once empty
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = folder.parent
