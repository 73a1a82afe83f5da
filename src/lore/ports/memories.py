"""The memories port: what a memory is and may hold (the value types, the checks every
write passes: length, kind, keywords, secrets; the export record `import` reads back),
and what every memory store must do."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from lore.errors import InvalidInputError
from lore.secrets import find_secret, refusal

__all__ = [
    "ActivePage",
    "MemoryStore",
    "KINDS",
    "MAX_CONTENT",
    "MAX_ID",
    "MAX_KEYWORD",
    "MAX_KEYWORDS",
    "VIA",
    "AuditEntry",
    "Draft",
    "ImportResult",
    "Imported",
    "Memory",
    "Source",
    "check_write",
    "clean_author",
    "content_key",
    "iso",
    "make_draft",
    "valid_id",
    "parse_record",
]

KINDS = ("profile", "preference", "fact", "plan", "relation", "event")
VIA = ("tool", "extraction", "cli", "api", "command", "import")
MAX_CONTENT = 500
MAX_KEYWORDS = 20
MAX_KEYWORD = 50
_MAX_AUTHOR = 80
MAX_ID = 2**63 - 1  # SQLite's largest integer: a larger id cannot name any memory
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Source:
    """Where a memory was said: the session and the index of the user message."""

    session_id: str
    message_index: int | None = None


@dataclass(frozen=True)
class Memory:
    id: int
    scope: str
    content: str
    kind: str
    keywords: tuple[str, ...]
    author: str
    source: Source | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    status: str  # active, superseded, forgotten
    superseded_by: int | None = None

    def to_record(self) -> dict[str, Any]:
        """The export (and `--json`) form; `import_` reads it back exactly."""
        return {
            "id": self.id,
            "kind": self.kind,
            "content": self.content,
            "keywords": list(self.keywords),
            "author": self.author,
            "source": None
            if self.source is None
            else {"session": self.source.session_id, "message": self.source.message_index},
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "expires_at": None if self.expires_at is None else iso(self.expires_at),
        }


@dataclass(frozen=True)
class AuditEntry:
    id: int
    memory_id: int
    action: str  # add, update, forget, import
    actor: str
    via: str
    at: datetime
    detail: dict[str, Any] | None  # what was written; None once forgotten


@dataclass(frozen=True)
class ImportResult:
    added: list[int]
    already_present: list[int]


@dataclass(frozen=True)
class Draft:
    """A checked memory, ready to write."""

    content: str
    kind: str
    keywords: tuple[str, ...]
    author: str
    source: Source | None = None
    expires_at: datetime | None = None

    def detail(self, **extra: Any) -> dict[str, Any]:
        """What the audit keeps of a write (until the memory is forgotten)."""
        detail = {"content": self.content, "kind": self.kind, "keywords": list(self.keywords)}
        if self.expires_at is not None:
            detail["expires_at"] = iso(self.expires_at)
        return {**detail, **extra}


@dataclass(frozen=True)
class Imported:
    number: int
    memory_id: int | None
    draft: Draft
    created_at: datetime
    updated_at: datetime


def make_draft(
    content: str,
    kind: str,
    keywords: Iterable[str],
    author: str,
    source: Source | None = None,
    expires_at: datetime | None = None,
) -> Draft:
    text = clean(content)
    if not text:
        raise InvalidInputError("a memory needs some text")
    if len(text) > MAX_CONTENT:
        raise InvalidInputError(
            f"a memory is at most {MAX_CONTENT} characters and this one has {len(text)}; "
            "keep one durable fact per memory"
        )
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(KINDS)}")
    words = clean_keywords(keywords)
    reason = find_secret(" ".join((text, *words)))
    if reason is not None:
        raise InvalidInputError(refusal(reason))
    author = clean_author(author)
    if not author:
        raise InvalidInputError("a memory needs an author")
    if expires_at is not None:
        iso(expires_at)  # aware, or a clear error now rather than halfway through a write
    return Draft(text, kind, words, author, source, expires_at)


def clean_keywords(keywords: Iterable[str]) -> tuple[str, ...]:
    if isinstance(keywords, str):
        keywords = keywords.split(",")
    found: dict[str, str] = {}
    for keyword in keywords:
        if not isinstance(keyword, str):
            raise InvalidInputError("keywords must be strings")
        word = clean(keyword)
        if len(word) > MAX_KEYWORD:
            raise InvalidInputError(f"a keyword is at most {MAX_KEYWORD} characters")
        if word:
            found.setdefault(word.casefold(), word)
    if len(found) > MAX_KEYWORDS:
        raise InvalidInputError(f"at most {MAX_KEYWORDS} keywords")
    return tuple(found.values())


def clean(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def clean_author(author: str) -> str:
    return clean(author)[:_MAX_AUTHOR]


def check_write(scope: str, via: str) -> None:
    """Programming errors, not user input: a caller that passes these is wrong."""
    if not scope:
        raise ValueError("a memory needs a scope")
    if via not in VIA:
        raise ValueError(f"via must be one of {VIA}, not {via!r}")


def valid_id(memory_id: int) -> bool:
    return 0 < memory_id <= MAX_ID


def content_key(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("memory timestamps must be aware datetimes")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_record(number: int, line: str) -> Imported:
    """One export line, checked field by field; every error names the line."""
    try:
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        content, kind, author = data["content"], data.get("kind", "fact"), data["author"]
        keywords, memory_id, source = data.get("keywords", []), data.get("id"), data.get("source")
        if not all(isinstance(v, str) for v in (content, kind, author)):
            raise ValueError("content, kind and author must be strings")
        if not isinstance(keywords, list):
            raise ValueError("keywords must be a list")
        if memory_id is not None and (type(memory_id) is not int or not valid_id(memory_id)):
            raise ValueError("id must be a positive integer")
        if source is not None:
            message = source.get("message") if isinstance(source, dict) else None
            if not isinstance(source, dict) or not isinstance(source.get("session"), str):
                raise ValueError("source must be {session, message}")
            if message is not None and type(message) is not int:
                raise ValueError("source.message must be an integer")
            source = Source(source["session"], message)
        created = parse_time(data["created_at"])
        updated = parse_time(data.get("updated_at", data["created_at"]))
        expires = None if data.get("expires_at") is None else parse_time(data["expires_at"])
    except (ValueError, KeyError, TypeError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InvalidInputError(f"line {number} is not a memory: {detail}") from None
    try:
        draft = make_draft(content, kind, keywords, author, source, expires)
    except InvalidInputError as exc:
        raise InvalidInputError(f"line {number}: {exc}") from None
    return Imported(number, memory_id, draft, created, updated)


def parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("timestamps must be ISO 8601 strings")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone")
    return moment


@dataclass(frozen=True)
class ActivePage:
    """The first memories of a scope in block order, and how many are active in all."""

    memories: list[Memory]
    total: int


class MemoryStore(Protocol):
    """Memories, per scope. Each public write is one transaction; a scope never sees
    another's memories; forgetting erases the text of every version everywhere.

    Every write checks its input with `make_draft` (InvalidInputError, nothing written)
    and `check_write` (ValueError); a naive `now` is a ValueError. An id of another scope,
    unknown, forgotten or out of range is a NotFoundError naming "#id in this
    conversation". Times come back as the same instants (in any zone). The suite in
    tests/contract/test_memories_contract.py holds every backend to this.
    """

    def remember(
        self,
        scope: str,
        content: str,
        *,
        kind: str = "fact",
        keywords: Iterable[str] = (),
        author: str,
        via: str,
        now: datetime,
        source: Source | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[Memory, bool]:
        """Store a fact; an exact duplicate (of the cleaned text) active in the scope
        returns the existing one and False. A duplicate that has expired is renewed: the
        new memory supersedes it, and True is returned."""

    def supersede(
        self,
        scope: str,
        memory_id: int,
        content: str,
        *,
        kind: str | None = None,
        keywords: Iterable[str] | None = None,
        author: str,
        via: str,
        now: datetime,
        source: Source | None = None,
        expires_at: datetime | None = None,
    ) -> Memory:
        """Replace an active memory with a new version; the old one stays in the history,
        `superseded`, pointing at the new. Kind and keywords carry over unless given; the
        new version keeps the chain's `created_at`. An old version, or a text another
        active memory of the scope holds, is an InvalidInputError."""

    def forget(self, scope: str, memory_id: int, *, by: str, via: str, now: datetime) -> list[int]:
        """Erase a memory and every earlier version of it; returns the erased ids. Their
        ids stay taken, `get` no longer finds them, and the audit keeps who, when and
        how (a `forget` entry with {"erased": ids}) but none of their text (detail None)."""

    def import_(
        self, scope: str, lines: Iterable[str], *, by: str, via: str, now: datetime
    ) -> ImportResult:
        """Read `export` lines back, all or nothing (a bad line is named, nothing is
        written). An id is kept when no memory has it; a text already active is reported
        as already present. Audited as `import`."""

    def batch(self) -> AbstractContextManager[None]:
        """Several writes as one transaction (an exception inside undoes them all); what
        a `forget` inside erased is gone from every file of the store when the batch ends."""

    def get(self, scope: str, memory_id: int) -> Memory:
        """A memory of this scope, active or superseded (never a forgotten one)."""

    def active(self, scope: str, *, now: datetime, limit: int | None = None) -> list[Memory]:
        """Unexpired active memories: profile first, then most recently updated."""

    def active_page(self, scope: str, *, now: datetime, limit: int | None) -> ActivePage:
        """The first `limit` memories in block order (None: all of them) and how many are
        live in all, read from one snapshot."""
        ...

    def search(self, scope: str, query: str, *, now: datetime, limit: int = 10) -> list[Memory]:
        """Unexpired active memories of the scope matching any word of `query` (their
        text or keywords; a CJK word by its characters, in any script), best first, at
        most `limit` (1 to 100). A query with no word finds nothing."""

    def history(self, scope: str, memory_id: int) -> list[AuditEntry]:
        """The audit of the memory's whole chain of versions (from any version of it,
        forgotten ones included), oldest first."""

    def recent_changes(self, scope: str, *, limit: int = 5) -> list[AuditEntry]:
        """The scope's latest audit entries, newest first (at least one is asked for)."""

    def export(self, scope: str) -> list[str]:
        """Every active memory of the scope, expired ones included, as JSON lines of
        `Memory.to_record`, by id."""

    def scopes(self) -> list[str]:
        """Every conversation holding an active memory (expired ones count), sorted."""

    def matching(self, match: Callable[[str], bool]) -> tuple[list[int], list[int]]:
        """Memories of any scope (not forgotten) and audit rows whose text `match`es."""

    def erase(
        self,
        memory_ids: Sequence[int],
        audit_ids: Sequence[int],
        *,
        by: str,
        via: str,
        now: datetime,
    ) -> None:
        """Erase these memories' text and these audit details, whatever their scope."""

    def compact(self) -> bool:
        """Rewrite the store so no erased byte stays on disk; False if it had to wait."""
