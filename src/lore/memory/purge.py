"""Forget everywhere: find every copy of a text under Lore's home, show it, erase it.

A memory's text and the message it came from (or a phrase) can be copied into archived
transcripts and their file names, `_sessions.jsonl`, session summaries and daily notes,
`history.jsonl`, the curated files, the workspace's git history, the search index, the
live session, the log, and a chat message received but not yet answered (the chat ledger
keeps its text until its turn runs; it keeps its id and is still answered, with the words
replaced). `plan` finds each copy without changing anything; `apply` erases them: the
database rows first, then each file (atomically, JSON Lines keeping their structure and
every other message), the git history (replayed with redacted versions into a fresh
repository), the index entries rebuilt from the redacted files, then VACUUM and a WAL
checkpoint so no free page or WAL frame keeps the old bytes. Finally everything is
searched again and whatever is left is reported.

Only exact copies are found (case-insensitive): a summary that paraphrased the text is
not. Logs carry counts and paths here, never the text.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from lore.errors import ConfigError, InvalidInputError
from lore.files import fsync_dir, locked_file
from lore.memory.redaction import Redactor
from lore.ports.backend import STORES
from lore.ports.redaction import Redactable

if TYPE_CHECKING:
    from lore.core.services import Services as Lore
    from lore.ports.memories import Memory
    from lore.ports.notes import Versions
    from lore.ports.search import SearchIndexPort as SearchIndex
    from lore.ports.sessions import SessionStore

__all__ = [
    "MIN_CHARS",
    "Place",
    "PurgePlan",
    "PurgeReport",
    "apply",
    "plan",
    "purge_everywhere",
    "texts_of_memory",
]

log = logging.getLogger(__name__)

MIN_CHARS = 3  # a shorter phrase would erase ordinary words everywhere
_DATABASE = ("lore.db", "lore.db-wal", "lore.db-shm")


_PLURALS = {
    "line": "lines",
    "place": "places",
    "memory": "memories",
    "audit detail": "audit details",
    "search index entry": "search index entries",
    "version in the history": "versions in the history",
    "reminder": "reminders",
    "delivery": "deliveries",
    "session record": "session records",
    "history entry": "history entries",
    "chat message not yet answered": "chat messages not yet answered",
    "copy in a scheduled backup": "copies in a scheduled backup",
}


@dataclass(frozen=True)
class Place:
    where: str  # a path relative to the home, or "lore.db"
    count: int
    what: str  # a key of _PLURALS
    note: str = ""

    def describe(self) -> str:
        noun = self.what if self.count == 1 else _PLURALS[self.what]
        return f"{self.where}: {self.count} {noun}" + (f" ({self.note})" if self.note else "")


@dataclass
class PurgePlan:
    texts: tuple[str, ...]
    places: list[Place] = field(default_factory=list)
    unredactable: list[str] = field(default_factory=list)  # binary files holding the text
    memory_ids: list[int] = field(default_factory=list)
    audit_ids: list[int] = field(default_factory=list)
    entry_ids: list[int] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)  # scheduled backups holding the text

    @property
    def empty(self) -> bool:
        return not self.places


@dataclass(frozen=True)
class PurgeReport:
    """What forget-everywhere found (and, when `erased`, erased) for a memory or a phrase."""

    memory_id: int | None
    phrase: str | None
    subject: str  # "memory #12 and the message it came from", "the phrase"
    home: Path
    found: list[Place]
    unredactable: list[str]  # places holding the text that are not text
    erased: bool
    left: list[str]  # where a copy was still found after erasing

    def lines(self, confirm: str) -> list[str]:
        """What `lore forget --everywhere` and `/forget ID everywhere` say."""
        lines = [f"Forget everywhere: {self.subject}."]
        if not self.found and not self.unredactable and self.memory_id is None:
            return [*lines, f"No copy found under {self.home}."]
        listing = [f"  {place.describe()}" for place in self.found]
        listing += [
            f"  {where}: holds it but is not text; delete it yourself"
            for where in self.unredactable
        ]
        if not self.erased:
            return [*lines, "Found:", *listing, f"Nothing was changed. {confirm}"]
        lines += ["Erased:", *listing]
        if self.left:
            return [*lines, "Still found afterwards:", *(f"  {where}" for where in self.left)]
        return [*lines, f"Checked afterwards: no copy is left under {self.home}."]

    def to_dict(self) -> dict[str, object]:
        return {
            "memory_id": self.memory_id,
            "phrase": self.phrase,
            "found": [
                {"where": p.where, "count": p.count, "what": p.what, "note": p.note}
                for p in self.found
            ],
            "not_text": self.unredactable,
            "erased": self.erased,
            "left": self.left,
        }


def purge_everywhere(
    lore: Lore,
    scope: str,
    *,
    memory_id: int | None = None,
    phrase: str | None = None,
    erase: bool,
    by: str,
    via: str,
) -> PurgeReport:
    """Every copy of a memory (and the message it came from) or of a phrase under the
    home; erased, and searched for again, when `erase`."""
    if memory_id is not None:
        memory, texts = texts_of_memory(lore, scope, memory_id)
        said = len(texts) - 1 - sum(k in texts for k in memory.keywords)
        subject = f"memory #{memory_id}" + (" and the message it came from" if said else "")
        if memory.keywords:
            subject += " (with its keywords)"
    elif phrase is not None:
        texts, subject = [phrase], "the phrase"
    else:
        raise InvalidInputError("give a memory id or a phrase to forget")
    found = plan(lore, texts)
    report = PurgeReport(
        memory_id,
        phrase,
        subject,
        lore.config.home,
        list(found.places),
        list(found.unredactable),
        erased=False,
        left=[],
    )
    nothing = found.empty and not found.unredactable and memory_id is None
    if not erase or nothing:
        return report
    if memory_id is not None:
        lore.memory.forget(scope, memory_id, by=by, via=via, now=lore.clock.now())
    left = apply(lore, found, by=by, via=via)
    return replace(report, erased=True, left=list(left))


def texts_of_memory(lore: Lore, scope: str, memory_id: int) -> tuple[Memory, list[str]]:
    """A memory of `scope` and the texts to erase for it: its own text, the user message
    it was taken from (when Lore still knows it), then its keywords, which the call that
    wrote it and the index carry beside its text (one shorter than MIN_CHARS is left)."""
    memory = lore.memory.get(scope, memory_id)
    texts = [memory.content]
    source = memory.source
    if source is not None and source.message_index is not None:
        message = _source_message(lore, scope, source.session_id, source.message_index)
        if message and len(message.strip()) >= MIN_CHARS and message not in texts:
            texts.append(message)
    for keyword in memory.keywords:
        if len(keyword.strip()) >= MIN_CHARS and keyword not in texts:
            texts.append(keyword)
    return memory, texts


# The stores that keep people's words some other way than `Redactable`: memories are
# erased by id (`matching`, `erase`), the index re-indexed, and sessions hold messages,
# whose every field is passed through the redactor.
_ERASED_OTHERWISE = ("memory", "search_index")


def text_stores(lore: Lore) -> list[Redactable | SessionStore]:
    """Every store of the backend that forget-everywhere redacts, found by its type; a
    store that holds text and is neither is a TypeError, never skipped in silence."""
    found: list[Redactable | SessionStore] = []
    for name in STORES:
        if name in _ERASED_OTHERWISE:
            continue
        try:
            store = getattr(lore.backend, name)
        except ConfigError:  # a backend that cannot keep such a store keeps none of its text
            continue
        if name == "sessions":
            found.append(store)
        elif isinstance(store, Redactable):
            if store not in found:
                found.append(store)
        else:
            raise TypeError(f"the {name} store keeps text but is not Redactable")
    return found


def plan(lore: Lore, texts: list[str]) -> PurgePlan:
    """Every copy of `texts` under the home; nothing is changed."""
    for text in texts:
        if len(text.strip()) < MIN_CHARS:
            raise InvalidInputError(
                f"a phrase to forget needs at least {MIN_CHARS} characters, "
                "or it would erase ordinary words everywhere"
            )
    redactor = Redactor(tuple(texts))
    found = PurgePlan(tuple(texts))
    home = lore.config.home

    def match(value: str) -> bool:
        return redactor.count(value) > 0

    if _has_database(lore):
        found.memory_ids, found.audit_ids = lore.memory.matching(match)
        found.entry_ids = _search_index(lore).entries_matching(match)
        rows = [
            (len(found.memory_ids), "memory", _ids(found.memory_ids)),
            (len(found.audit_ids), "audit detail", ""),
            (len(found.entry_ids), "search index entry", ""),
        ]
        for store in text_stores(lore):
            if isinstance(store, Redactable):
                changed = store.redact_text(match, redactor.text, dry_run=True)
                rows.append((changed, store.redacted_noun, ""))
            else:  # on PostgreSQL sessions are rows (on SQLite, files: below)
                changed = store.redact_messages(match, redactor.value, dry_run=True)
                rows.append((changed, "session record", ""))
        where = "PostgreSQL" if lore.config.database_url else "lore.db"
        for count, what, note in rows:
            if count:
                found.places.append(Place(where, count, what, note))
    for path in _files(lore):
        data = path.read_bytes()
        relative = path.relative_to(home).as_posix()
        count = redactor.raw_count(data)
        renamed = _renamed(redactor, path, lore)
        if b"\x00" in data:
            if count:
                found.unredactable.append(relative)
            continue
        if count or renamed:
            found.files.append(path)
            what = "line" if path.suffix == ".jsonl" else "place"
            if path.suffix == ".jsonl":
                count = redactor.jsonl(data)[1]
            note = f"renamed to {renamed.name}" if renamed else ""
            found.places.append(Place(relative, count, what, note))
    changes = _git(lore).rewrite_history(redactor.raw, dry_run=True)
    if changes:
        found.places.append(
            Place("workspace/.git", changes, "version in the history", "the history is replayed")
        )
    for where, times in lore.backups.holding(redactor.raw_count):
        if not times:  # it cannot be read, so it may hold the text: the owner decides
            found.unredactable.append(f"{where} (a backup that cannot be read)")
            continue
        found.backups.append(where)
        note = "replaced by a fresh backup"
        found.places.append(Place(where, times, "copy in a scheduled backup", note))
    return found


def apply(lore: Lore, found: PurgePlan, *, by: str, via: str) -> list[str]:
    """Erase every copy `found` lists; what is still left afterwards (empty: nothing)."""
    redactor = Redactor(found.texts)
    now = lore.clock.now()
    if found.memory_ids or found.audit_ids:
        lore.memory.erase(found.memory_ids, found.audit_ids, by=by, via=via, now=now)
    index = _search_index(lore) if _has_database(lore) else None
    if index is not None and found.entry_ids:
        index.remove_entries(found.entry_ids)
    if index is not None:

        def match(value: str) -> bool:
            return redactor.count(value) > 0

        for store in text_stores(lore):
            if isinstance(store, Redactable):
                store.redact_text(match, redactor.text)
            else:
                store.redact_messages(match, redactor.value)
    for path in found.files:
        _redact_file(lore, redactor, path)
    _git(lore).rewrite_history(redactor.raw)
    if index is not None:
        _reindex(lore, index)
        if not lore.memory.compact():
            log.warning("forget: another process kept the WAL busy; it empties on its close")
    # Last: the fresh backup copies the database after VACUUM left no old page in it.
    lore.backups.replace_holding(found.backups, now)
    log.info("forget everywhere: erased copies in %d places", len(found.places))
    left = plan(lore, list(found.texts))
    return [place.describe() for place in left.places] + left.unredactable


def _has_database(lore: Lore) -> bool:
    """Are there stores to look in? (Looking must not create a home's lore.db.)"""
    return lore.backend.exists


# -- files -----------------------------------------------------------------------------


def _files(lore: Lore) -> Iterator[Path]:
    """Every file under the home but the database and the workspace's git directory."""
    home = lore.config.home
    git_dir = lore.config.workspace / ".git"
    backups = lore.config.backup.directory(home)  # compressed: read by lore.backups
    for root, dirs, names in os.walk(home):
        here = Path(root)
        if here in (git_dir, backups) or git_dir in here.parents or backups in here.parents:
            dirs[:] = []
            continue
        dirs.sort()
        for name in sorted(names):
            if here == home and name in _DATABASE:
                continue
            if name.endswith(".lock"):
                continue
            yield here / name


def _renamed(redactor: Redactor, path: Path, lore: Lore) -> Path | None:
    """The new name of a file named after the text (an archived transcript, a summary);
    a live session keeps its name, which is its conversation key."""
    if path.parent == lore.config.sessions_dir or path.parent == lore.config.home:
        return None
    name = redactor.name(path.name)
    return None if name == path.name else path.with_name(name)


def _redact_file(lore: Lore, redactor: Redactor, path: Path) -> None:
    lock = _lock_for(lore, path)
    if lock is None:
        _rewrite(redactor, path, _renamed(redactor, path, lore))
        return
    with locked_file(lock):
        _rewrite(redactor, path, None)


def _lock_for(lore: Lore, path: Path) -> Path | None:
    sessions = lore.config.sessions_dir
    if path.name == "history.jsonl":
        return path.parent / ".history.lock"
    if path.parent != sessions or path.suffix != ".jsonl":
        return None
    if path.name == "_sessions.jsonl":
        return sessions / "_sessions.lock"
    return path.with_suffix(".lock")  # the live session's own lock


def _rewrite(redactor: Redactor, path: Path, target: Path | None) -> None:
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        new, _ = redactor.jsonl(data)
    else:
        new = redactor.raw(data)
    if path.name.startswith("lore.log"):
        # The log handler keeps the file open for appending: rewrite it in place.
        with path.open("r+b") as f:
            f.write(new)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
        return
    destination = target or path
    tmp = destination.with_name(f".{destination.name}.forget-tmp")
    with tmp.open("wb") as f:
        f.write(new)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, destination)
    if target is not None and target != path:
        path.unlink()
    fsync_dir(destination.parent)


# -- database, index, git --------------------------------------------------------------


def _search_index(lore: Lore) -> SearchIndex:
    return lore.search_index


def _reindex(lore: Lore, index: SearchIndex) -> None:
    """Index the redacted notes and transcripts again (their text changed)."""
    from lore.search import sources

    if lore.config.workspace.exists():
        sources.sync_notes(index, lore.config.workspace, lore.notes)
    sources.sync_archive(index, lore.sessions.archive, zone=lore.zone)


def _git(lore: Lore) -> Versions:
    return lore.versions


def _source_message(lore: Lore, scope: str, session_id: str, index: int) -> str | None:
    from lore.errors import SessionError

    live = lore.session(scope)
    messages = live.messages if live.meta.session_id == session_id else None
    if messages is None:
        archive = lore.sessions.archive
        entry = archive.get(session_id)
        if entry is None:
            return None
        try:
            messages, _ = archive.read_messages(entry, offset=index, limit=1)
        except SessionError:
            return None
        index = 0
    if not 0 <= index < len(messages):
        return None
    content = messages[index].get("content")
    return content if isinstance(content, str) else None


def _ids(ids: list[int]) -> str:
    shown = ", ".join(f"#{n}" for n in ids[:10])
    return shown + (", …" if len(ids) > 10 else "")
