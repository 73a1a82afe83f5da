"""What feeds the index: structured memories, the Markdown notes, archived sessions.

Memories arrive through the `search_queue` the m003 triggers fill (`catch_up_memories`),
or eagerly through `index_memory`. Notes (MEMORY.md, memory/*.md) are chunked by heading,
paragraph and list item; a file is re-read only when its size or mtime changed, and
re-indexed only when its text did. Archived sessions are read through `SessionArchive`:
every user and assistant message, as "speaker: text", with its time. A live session's
messages are added as they come (`index_live`), and indexed afresh once it is archived.

Notes carry the scope they came from as a field of their record (`NotesStore`): a daily
note's section, a raw archive's, a session summary belong to the conversation that wrote
them. MEMORY.md and any file no record names (one the person wrote) belong to the owner
(`NOTES_SCOPE`), which only the owner's scopes search. Nothing in the Markdown decides
who may see it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import SessionError
from lore.ports.notes import OWNER_SCOPE, NotesStore
from lore.ports.search import Entry, SourceRecord
from lore.ports.search import SearchIndexPort as SearchIndex
from lore.search.timespan import find_about

if TYPE_CHECKING:
    from lore.messages import Message
    from lore.ports.memories import Memory, MemoryStore
    from lore.ports.sessions import ArchivedSession, LiveSession, SessionArchive

__all__ = [
    "NOTES_SCOPE",
    "Chunk",
    "catch_up_memories",
    "chunk_mark",
    "chunk_markdown",
    "date_words",
    "index_memory",
    "index_note_file",
    "index_live",
    "index_session",
    "memory_entry",
    "session_entries",
    "sync_archive",
    "sync_notes",
    "turn_mark",
    "unindex_memory",
]

log = logging.getLogger(__name__)

# Indexing a live session and hiding a forgotten turn are ordered by this lock: an
# indexing that read the hidden marks before a forget could otherwise put back the turn
# the forget had just dropped.
INDEXING = threading.RLock()

NOTES_SCOPE = OWNER_SCOPE
_CONTEXT_CHARS = 300  # of the previous turn, embedded with a message
_CHUNK_CHARS = 1200
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+")
# A session summary's header lines: links, not content.
_META_LINE = re.compile(r"^- (?:Session ID|Session Key|Ended At|Transcript|Session Index): ")
_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_DATED = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:-(\d{2})(\d{2}))?")


# -- memories -------------------------------------------------------------------------------


def memory_entry(memory: Memory) -> Entry:
    """A memory's entry: said when it was last written, about the time its text names
    ("we moved last year"), resolved against when it was first noted."""
    about = find_about(memory.content, memory.created_at, memory.created_at.tzinfo or UTC)
    return Entry(
        scope=memory.scope,
        kind="memory",
        source="",
        locator=memory.id,
        at=memory.updated_at.timestamp(),
        text=memory.content,
        extra=" ".join(memory.keywords),
        expires_at=None if memory.expires_at is None else memory.expires_at.timestamp(),
        about_start=None if about is None else about.start,
        about_end=None if about is None else about.end,
    )


def index_memory(index: SearchIndex, memory: Memory) -> None:
    """Index (or re-index) one memory now; the triggers make this optional."""
    if memory.status != "active":
        index.remove_memory(memory.id)
        return
    with index.batch():
        index.put([memory_entry(memory)])
        index.dequeue_memories([memory.id])


def unindex_memory(index: SearchIndex, memory_id: int) -> None:
    """Remove a memory from text and vector search (the triggers do this on forget too)."""
    index.remove_memory(memory_id)


def catch_up_memories(index: SearchIndex, store: MemoryStore) -> int:
    """Index the memories written since the last call (by any process); returns how many."""
    from lore.errors import NotFoundError

    done = 0
    while index.has_queued_memories():
        # One write transaction from reading the queue to indexing: a memory forgotten
        # meanwhile (by another thread or process) can never slip back into the index.
        with index.batch():
            queued = index.queued_memories()
            entries = []
            for memory_id, scope in queued:
                try:
                    memory = None if scope is None else store.get(scope, memory_id)
                except NotFoundError:
                    memory = None
                if memory is not None and memory.status == "active":
                    entries.append(memory_entry(memory))
            index.put(entries)
            index.dequeue_memories([memory_id for memory_id, _ in queued])
        done += len(entries)
        if not queued:
            break
    return done


# -- notes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    line: int  # 1-based line of the chunk's first line
    heading: str  # the headings above it, outermost first, joined by " › "
    text: str
    scope: str


def chunk_markdown(text: str, *, scope: str = NOTES_SCOPE, first_line: int = 1) -> list[Chunk]:
    """Split Markdown into searchable pieces: one per paragraph or list item, with the
    headings above each; all of it in `scope`. `first_line` is where `text` begins in its
    file, so each chunk knows its own line there."""
    lines = text.splitlines()
    chunks: list[Chunk] = []
    headings: list[tuple[int, str]] = []
    block: list[str] = []
    start = 0

    def flush() -> None:
        body = "\n".join(block).strip()
        block.clear()
        if not body:
            return
        title = " › ".join(h[1] for h in headings)
        for offset, piece in _split_long(body):
            chunks.append(Chunk(start + offset + first_line - 1, title, piece, scope))

    for number, line in enumerate(lines, 1):
        heading = _HEADING.match(line)
        if heading:
            flush()
            level, title = len(heading.group(1)), heading.group(2)
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, title))
            continue
        if _META_LINE.match(line):
            flush()
            continue
        if not line.strip() or (_LIST_ITEM.match(line) and block):
            flush()
        if line.strip():
            if not block:
                start = number
            block.append(line)
    flush()
    return chunks


def _split_long(body: str) -> Iterator[tuple[int, str]]:
    """A paragraph longer than the embedder reads well, cut at line or sentence ends."""
    if len(body) <= _CHUNK_CHARS:
        yield 0, body
        return
    piece, first = "", 0
    for offset, line in enumerate(body.split("\n")):
        for sentence in re.split(r"(?<=[.!?。！？])\s*", line):
            if piece and len(piece) + len(sentence) > _CHUNK_CHARS:
                yield first, piece.strip()
                piece, first = "", offset
            piece += sentence + " "
    if piece.strip():
        yield first, piece.strip()


def index_note_file(
    index: SearchIndex, root: Path, path: Path, notes: NotesStore, *, force: bool = False
) -> bool:
    """(Re-)index one Markdown file under the workspace `root`; False when unchanged."""
    name = path.relative_to(root).as_posix()
    try:
        stat = path.stat()
        raw = path.read_bytes()
    except FileNotFoundError:
        return index.remove_source("note", name) > 0
    records = notes.notes(name) if name.startswith("memory/") else []
    digest = hashlib.sha256(raw + repr([(n.scope, n.line) for n in records]).encode()).hexdigest()
    known = index.source_records("note").get(name)
    record = SourceRecord("note", name, NOTES_SCOPE, stat.st_mtime_ns, stat.st_size, digest)
    if known is not None and known.digest == digest and not force:
        if (known.mtime_ns, known.size) != (stat.st_mtime_ns, stat.st_size):
            index.replace_source_record(record)
        return False
    text = raw.decode("utf-8", errors="replace")
    at = _dated(path.stem) or stat.st_mtime
    dated = _dated(path.stem) is not None
    words = date_words(at, UTC) if dated else ""
    if records:
        # Each note in the conversation it came from, whatever its text or headings say.
        title = _file_title(text)
        chunks = [
            Chunk(
                c.line, " › ".join(p for p in (title, note.title, c.heading) if p), c.text, c.scope
            )
            for note in records
            for c in chunk_markdown(note.text, scope=note.scope, first_line=note.line)
        ]
    elif name == "MEMORY.md" and _is_template(text):
        chunks = []
    else:
        chunks = chunk_markdown(text)  # MEMORY.md, or a file the person wrote: the owner's
    hidden = index.hidden("note").get("", frozenset())
    entries = [
        Entry(chunk.scope, "note", name, chunk.line, at, chunk.text, chunk.heading, extra=words)
        for chunk in chunks
        if not hidden or chunk_mark(chunk.text) not in hidden
    ]
    index.replace_source("note", name, entries, record)
    return True


def _file_title(text: str) -> str:
    first = text.split("\n", 1)[0]
    heading = _HEADING.match(first)
    return heading.group(2) if heading else ""


def sync_notes(index: SearchIndex, root: Path, notes: NotesStore) -> int:
    """Bring MEMORY.md, memory/*.md and the notes imported under memory/imported/ up to
    date; returns how many files were re-indexed."""
    present: dict[str, Path] = {}
    imported = sorted((root / "memory" / "imported").rglob("*.md"))  # lore import markdown
    for path in [root / "MEMORY.md", *sorted((root / "memory").glob("*.md")), *imported]:
        if path.is_file():
            present[path.relative_to(root).as_posix()] = path
    known = index.source_records("note")
    noted = notes.paths()  # a file with records is re-checked (a record may be newer)
    changed = 0
    for name in known.keys() - present.keys():
        index.remove_source("note", name)
        changed += 1
    for name, path in present.items():
        record = known.get(name)
        if record is not None and name not in noted:
            stat = path.stat()
            if (record.mtime_ns, record.size) == (stat.st_mtime_ns, stat.st_size):
                continue
        changed += index_note_file(index, root, path, notes)
    return changed


def _dated(stem: str) -> float | None:
    """The time a dated note's name gives (memory/2026-11-29-1430-slug.md), as UTC."""
    match = _DATED.match(stem)
    if not match:
        return None
    year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups())
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _is_template(text: str) -> bool:
    from lore.ports.notes import template

    return text.strip() == template("MEMORY.md").strip()


# -- archived sessions --------------------------------------------------------------------


def session_entries(
    session_id: str,
    scope: str,
    messages: list[Message],
    *,
    default_at: float,
    zone: tzinfo = UTC,
    facts: dict[int, list[str]] | None = None,
    first: int = 0,
    hidden: frozenset[str] = frozenset(),
) -> list[Entry]:
    """One entry per user or assistant message with text (from message index `first`
    on). Each also matches (at a lower weight) its date, the turns either side of it and
    the facts extracted from it (`facts`, by message index), and is embedded with the
    turn before it: an answer is found through the question it answers. A `hidden`
    turn (a forgotten memory's: marks of `turn_mark`) is left out, and out of its
    neighbours' context too."""
    talk: list[tuple[int, str, str, float]] = []
    turn = 0
    for position, message in enumerate(messages):
        if message["role"] == "user":
            turn = position
        if message["role"] not in ("user", "assistant") or turn_mark(turn) in hidden:
            continue
        text = _content_text(message.get("content"))
        if text:
            speaker = message.get("author") or message["role"]
            at = _parse_time(message.get("timestamp")) or default_at
            talk.append((position, speaker, text, at))
    entries: list[Entry] = []
    for n, (position, speaker, text, at) in enumerate(talk):
        if position < first:
            continue
        about = find_about(text, datetime.fromtimestamp(at, zone), zone)
        before = _turn(talk[n - 1]) if n > 0 else ""
        after = _turn(talk[n + 1]) if n + 1 < len(talk) else ""
        entries.append(
            Entry(
                scope,
                "message",
                session_id,
                position,
                at,
                text,
                speaker,
                context=before[:_CONTEXT_CHARS],
                extra="\n".join(
                    p
                    for p in (
                        date_words(at, zone),
                        *(facts or {}).get(position, ()),
                        before,
                        after,
                    )
                    if p
                ),
                about_start=None if about is None else about.start,
                about_end=None if about is None else about.end,
            )
        )
    return entries


def turn_mark(user_index: int) -> str:
    """A hidden turn's mark: the index of the user message that starts it."""
    return str(user_index)


def chunk_mark(text: str) -> str:
    """A hidden note chunk's mark: a digest of its words, wherever the chunk moves."""
    words = " ".join(text.casefold().split())
    return hashlib.sha256(words.encode("utf-8")).hexdigest()[:32]


def date_words(at: float, zone: tzinfo) -> str:
    """A day as people write it in a question: "8 May 2023 2023-05-08 2023年5月8日"."""
    day = datetime.fromtimestamp(at, zone)
    month = _MONTHS[day.month - 1]
    return f"{day.day} {month} {day.year} {day:%Y-%m-%d} {day.year}年{day.month}月{day.day}日"


def _turn(item: tuple[int, str, str, float]) -> str:
    return f"{item[1]}: {item[2]}"


def index_session(
    index: SearchIndex,
    archive: SessionArchive,
    entry: ArchivedSession,
    *,
    zone: tzinfo = UTC,
    force: bool = False,
) -> bool:
    """(Re-)index one archived session; False when its messages did not change. It is
    read through the archive port, whatever stores it."""
    fingerprint = archive.fingerprint(entry)
    try:
        messages, _ = archive.read_messages(entry)
    except SessionError:
        fingerprint = None
    if fingerprint is None:
        return index.remove_source("message", entry.session_id) > 0
    # Only the messages matter (a summary link rewrites the metadata). Serialised as the
    # local archive writes them, so its digests stay what they were.
    digest = hashlib.sha256(
        b"".join(
            json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            for m in messages
        )
    ).hexdigest()
    record = SourceRecord("message", entry.session_id, entry.key, *fingerprint, digest)
    known = index.source_records("message").get(entry.session_id)
    if known is not None and known.digest == digest and not force:
        index.replace_source_record(record)
        return False
    default_at = _parse_time(entry.created_at) or _parse_time(entry.ended_at) or 0.0
    entries = session_entries(
        entry.session_id,
        entry.key,
        messages,
        default_at=default_at,
        zone=zone,
        facts=index.facts_of(entry.key, entry.session_id),
        hidden=index.hidden("message").get(entry.session_id, frozenset()),
    )
    index.replace_source("message", entry.session_id, entries, record)
    return True


# A live session's source record: `size` holds how many of its messages are indexed.
_LIVE = "live"


def index_live(index: SearchIndex, session: LiveSession, *, zone: tzinfo = UTC) -> int:
    """Index the messages a live session gained since the last call, so a conversation
    still going on is searchable before it is archived; returns how many entries were
    added. Only new messages are added (entries already embedded keep their vectors):
    the last turn indexed before them keeps a key without the turn that follows it until
    the session is archived, when its transcript is indexed afresh as one source."""
    with INDEXING:
        return _index_live(index, session, zone)


def _index_live(index: SearchIndex, session: LiveSession, zone: tzinfo) -> int:
    meta = session.meta
    messages = session.messages
    known = index.source_record("message", meta.session_id)
    if known is not None and known.digest != _LIVE:
        return 0  # archived already (a close that stopped midway): the archive has it
    done = 0 if known is None else known.size
    if done > len(messages):  # rewritten under the same id: start again
        index.remove_source("message", meta.session_id)
        done = 0
    if done == len(messages):
        return 0
    default_at = _parse_time(meta.created_at) or 0.0
    entries = session_entries(
        meta.session_id,
        session.key,
        messages,
        default_at=default_at,
        zone=zone,
        facts=index.facts_of(session.key, meta.session_id),
        first=done,
        hidden=index.hidden("message").get(meta.session_id, frozenset()),
    )
    record = SourceRecord("message", meta.session_id, session.key, 0, len(messages), _LIVE)
    with index.batch():
        index.put(entries)
        index.replace_source_record(record)
    return len(entries)


def sync_archive(index: SearchIndex, archive: SessionArchive, *, zone: tzinfo = UTC) -> int:
    """Index every archived session not yet indexed (or changed since); returns how many."""
    known = index.source_records("message")
    changed = 0
    for entry in archive.entries():
        record = known.get(entry.session_id)
        if record is not None and (record.mtime_ns, record.size) == archive.fingerprint(entry):
            continue
        changed += index_session(index, archive, entry, zone=zone)
    return changed


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str)).strip()
    return ""


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
