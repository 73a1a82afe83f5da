"""The structured long-term memory, and the only code that runs SQL on its tables.

A memory is one short fact in one conversation scope. Updating supersedes (the old
version stays in the history, out of every prompt); forgetting erases the text of every
version from the table, the search index and the audit history, then checkpoints the WAL
so no copy of it survives in the database files. Every change is audited.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lore.errors import InvalidInputError, NotFoundError
from lore.memory.secrets import find_secret, refusal
from lore.memory.text import index_terms, match_expression
from lore.store.database import Database

__all__ = [
    "KINDS",
    "MAX_CONTENT",
    "MAX_KEYWORD",
    "MAX_KEYWORDS",
    "VIA",
    "ActivePage",
    "AuditEntry",
    "ImportResult",
    "Memory",
    "MemoryStore",
    "Source",
]

KINDS = ("profile", "preference", "fact", "plan", "relation", "event")
VIA = ("tool", "extraction", "cli", "api", "command")
MAX_CONTENT = 500
MAX_KEYWORDS = 20
MAX_KEYWORD = 50
_MAX_AUTHOR = 80
_MAX_ID = 2**63 - 1  # SQLite's largest integer: a larger id cannot name any memory
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_LIVE = "status = 'active' AND (expires_at IS NULL OR expires_at > :now)"
_BLOCK_ORDER = "(kind = 'profile') DESC, updated_at DESC, id DESC"


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
            "created_at": _ts(self.created_at),
            "updated_at": _ts(self.updated_at),
            "expires_at": None if self.expires_at is None else _ts(self.expires_at),
        }


@dataclass(frozen=True)
class ActivePage:
    """The first memories of a scope in block order, and how many are active in all."""

    memories: list[Memory]
    total: int


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
class _Draft:
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
            detail["expires_at"] = _ts(self.expires_at)
        return {**detail, **extra}


@dataclass(frozen=True)
class _Imported:
    number: int
    memory_id: int | None
    draft: _Draft
    created_at: datetime
    updated_at: datetime


class MemoryStore:
    """Memories, per scope. Each public write is one transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- writing ------------------------------------------------------------------------

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
        """Store a fact; an exact duplicate in the scope returns the existing memory and False."""
        _check(scope, via)
        draft = _draft(content, kind, keywords, author, source, expires_at)
        with self._db.atomic() as conn:
            existing = self._duplicate(conn, scope, draft.content)
            if existing is not None:
                if existing.expires_at is None or existing.expires_at > now:
                    return existing, False
                # Noted again after it lapsed: the new version replaces the expired one.
                return self._replace(conn, existing, draft, via, now), True
            new_id = self._insert(conn, scope, draft, now, now)
            self._audit(conn, new_id, scope, "add", draft.author, via, now, draft.detail())
            return self._row(conn, new_id), True

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
        """Replace an active memory with a new version; the old one stays in the history."""
        _check(scope, via)
        with self._db.atomic() as conn:
            old = self._live(scope, memory_id)
            words = old.keywords if keywords is None else keywords
            draft = _draft(content, kind or old.kind, words, author, source, expires_at)
            twin = self._duplicate(conn, scope, draft.content)
            if twin is not None and twin.id != old.id:
                raise InvalidInputError(f"#{twin.id} already says exactly that")
            return self._replace(conn, old, draft, via, now)

    def forget(self, scope: str, memory_id: int, *, by: str, via: str, now: datetime) -> list[int]:
        """Erase a memory and every earlier version of it; returns the erased ids."""
        _check(scope, via)
        with self._db.atomic() as conn:
            memory = self._live(scope, memory_id)
            chain = [
                int(row[0])
                for row in conn.execute(
                    "WITH RECURSIVE chain(id) AS (SELECT ? UNION ALL SELECT m.id FROM memories m"
                    " JOIN chain c ON m.superseded_by = c.id) SELECT id FROM chain",
                    (memory.id,),
                )
            ]
            marks = ",".join("?" * len(chain))
            conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", chain)
            conn.execute(
                "UPDATE memories SET content = '', keywords = '[]', content_key = NULL,"
                f" status = 'forgotten', updated_at = ? WHERE id IN ({marks})",
                [_ts(now), *chain],
            )
            conn.execute(
                f"UPDATE memory_audit SET detail = NULL WHERE memory_id IN ({marks})", chain
            )
            self._audit(conn, memory.id, scope, "forget", by, via, now, {"erased": chain})
            # FTS5 before 3.42 keeps a deleted row's tokens in its segments (and writes them
            # again as a tombstone) until a merge; only a full merge guarantees they are gone.
            conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        if not self._db.conn.in_transaction:
            # The WAL still holds the old pages; fold it in and truncate it.
            self._db.checkpoint()
        return chain

    def import_(
        self, scope: str, lines: Iterable[str], *, by: str, via: str, now: datetime
    ) -> ImportResult:
        """Read `export` lines back; all or nothing. Ids are kept when free."""
        _check(scope, via)
        records = [_parse_record(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        added: list[int] = []
        present: list[int] = []
        with self._db.atomic() as conn:
            for record in records:
                existing = self._duplicate(conn, scope, record.draft.content)
                if existing is not None:
                    present.append(existing.id)
                    continue
                wanted = record.memory_id
                if wanted is not None and self._exists(conn, wanted):
                    wanted = None
                new_id = self._insert(
                    conn, scope, record.draft, record.created_at, record.updated_at, wanted
                )
                self._audit(conn, new_id, scope, "import", by, via, now, record.draft.detail())
                added.append(new_id)
        return ImportResult(added, present)

    # -- reading ------------------------------------------------------------------------

    def get(self, scope: str, memory_id: int) -> Memory:
        """A memory of this scope, in any state but forgotten."""
        row = None
        if _valid_id(memory_id):
            row = self._db.conn.execute(
                "SELECT * FROM memories WHERE id = ? AND scope = ? AND status != 'forgotten'",
                (memory_id, scope),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"there is no memory #{memory_id} in this conversation")
        return _memory(row)

    def active(self, scope: str, *, now: datetime, limit: int | None = None) -> list[Memory]:
        """Unexpired active memories in block order: profile first, then most recently updated."""
        rows = self._db.conn.execute(
            f"SELECT * FROM memories WHERE scope = :scope AND {_LIVE} ORDER BY {_BLOCK_ORDER}"
            " LIMIT :limit",
            {"scope": scope, "now": _ts(now), "limit": -1 if limit is None else limit},
        )
        return [_memory(row) for row in rows]

    def active_page(self, scope: str, *, now: datetime, limit: int) -> ActivePage:
        with self._db.atomic(immediate=False) as conn:  # one snapshot for both reads
            (total,) = conn.execute(
                f"SELECT count(*) FROM memories WHERE scope = :scope AND {_LIVE}",
                {"scope": scope, "now": _ts(now)},
            ).fetchone()
            return ActivePage(self.active(scope, now=now, limit=limit), int(total))

    def search(self, scope: str, query: str, *, now: datetime, limit: int = 10) -> list[Memory]:
        """Active memories of this scope matching any word of `query`, best first."""
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self._db.conn.execute(
            "SELECT memories.* FROM memory_fts JOIN memories ON memories.id = memory_fts.rowid"
            " WHERE memory_fts MATCH :match AND memories.scope = :scope"
            " AND memories.status = 'active'"
            " AND (memories.expires_at IS NULL OR memories.expires_at > :now)"
            " ORDER BY bm25(memory_fts, 0.0, 2.0, 1.0, 1.0), memories.updated_at DESC"
            " LIMIT :limit",
            {
                "match": f'scope_tag: "{_scope_tag(scope)}" AND ({expression})',
                "scope": scope,
                "now": _ts(now),
                "limit": max(1, min(limit, 100)),
            },
        )
        return [_memory(row) for row in rows]

    def history(self, scope: str, memory_id: int) -> list[AuditEntry]:
        """The audit trail of a memory's whole chain of versions, oldest first."""
        conn = self._db.conn
        if not self._exists(conn, memory_id, scope):
            raise NotFoundError(f"there is no memory #{memory_id} in this conversation")
        rows = conn.execute(
            "WITH RECURSIVE later(id) AS (SELECT :id UNION SELECT m.superseded_by FROM memories m"
            " JOIN later ON m.id = later.id WHERE m.superseded_by IS NOT NULL),"
            " chain(id) AS (SELECT id FROM later UNION SELECT m.id FROM memories m"
            " JOIN chain ON m.superseded_by = chain.id)"
            " SELECT * FROM memory_audit WHERE memory_id IN (SELECT id FROM chain) ORDER BY id",
            {"id": memory_id},
        )
        return [_audit_entry(row) for row in rows]

    def recent_changes(self, scope: str, *, limit: int = 5) -> list[AuditEntry]:
        """The scope's latest audit entries, newest first (what /memory reports)."""
        rows = self._db.conn.execute(
            "SELECT * FROM memory_audit WHERE scope = ? ORDER BY id DESC LIMIT ?",
            (scope, max(1, limit)),
        )
        return [_audit_entry(row) for row in rows]

    def export(self, scope: str) -> list[str]:
        """Every active memory of the scope (expired included) as JSON Lines, by id."""
        rows = self._db.conn.execute(
            "SELECT * FROM memories WHERE scope = ? AND status = 'active' ORDER BY id", (scope,)
        )
        return [json.dumps(_memory(row).to_record(), ensure_ascii=False) for row in rows]

    # -- internals ----------------------------------------------------------------------

    def _replace(
        self, conn: sqlite3.Connection, old: Memory, draft: _Draft, via: str, now: datetime
    ) -> Memory:
        conn.execute("UPDATE memories SET status = 'superseded' WHERE id = ?", (old.id,))
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (old.id,))
        new_id = self._insert(conn, old.scope, draft, old.created_at, now)
        conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (new_id, old.id))
        detail = draft.detail(replaces=old.id)
        self._audit(conn, new_id, old.scope, "update", draft.author, via, now, detail)
        return self._row(conn, new_id)

    def _insert(
        self,
        conn: sqlite3.Connection,
        scope: str,
        draft: _Draft,
        created_at: datetime,
        updated_at: datetime,
        memory_id: int | None = None,
    ) -> int:
        source, expires = draft.source or Source(""), draft.expires_at
        cursor = conn.execute(
            "INSERT INTO memories (id, scope, content, kind, keywords, author, source_session,"
            " source_message, created_at, updated_at, expires_at, content_key)"
            " VALUES (?, ?, ?, ?, ?, ?, nullif(?, ''), ?, ?, ?, ?, ?)",
            (
                *(memory_id, scope, draft.content, draft.kind),
                *(json.dumps(draft.keywords, ensure_ascii=False), draft.author),
                *(source.session_id, source.message_index, _ts(created_at), _ts(updated_at)),
                *(None if expires is None else _ts(expires), _content_key(draft.content)),
            ),
        )
        new_id = int(cursor.lastrowid or 0)
        terms = index_terms(draft.content)
        keywords = " ".join(f"{t.words} {t.grams}" for t in map(index_terms, draft.keywords))
        conn.execute(
            "INSERT INTO memory_fts (rowid, scope_tag, words, grams, keywords)"
            " VALUES (?, ?, ?, ?, ?)",
            (new_id, _scope_tag(scope), terms.words, terms.grams, keywords),
        )
        return new_id

    def _audit(
        self,
        conn: sqlite3.Connection,
        memory_id: int,
        scope: str,
        action: str,
        actor: str,
        via: str,
        now: datetime,
        detail: dict[str, Any],
    ) -> None:
        conn.execute(
            "INSERT INTO memory_audit (memory_id, scope, action, actor, via, at, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                scope,
                action,
                _clean_author(actor),
                via,
                _ts(now),
                json.dumps(detail, ensure_ascii=False),
            ),
        )

    def _exists(self, conn: sqlite3.Connection, memory_id: int, scope: str | None = None) -> bool:
        """Whether the id is taken (in `scope`, if given), whatever the memory's state."""
        if not _valid_id(memory_id):
            return False
        row = conn.execute(
            "SELECT 1 FROM memories WHERE id = ? AND scope = coalesce(?, scope)", (memory_id, scope)
        ).fetchone()
        return row is not None

    def _duplicate(self, conn: sqlite3.Connection, scope: str, content: str) -> Memory | None:
        row = conn.execute(
            "SELECT * FROM memories WHERE scope = ? AND content_key = ? AND status = 'active'",
            (scope, _content_key(content)),
        ).fetchone()
        return None if row is None else _memory(row)

    def _live(self, scope: str, memory_id: int) -> Memory:
        memory = self.get(scope, memory_id)
        if memory.status == "superseded":
            raise InvalidInputError(
                f"#{memory_id} is an old version, replaced by #{memory.superseded_by}"
            )
        return memory

    def _row(self, conn: sqlite3.Connection, memory_id: int) -> Memory:
        return _memory(conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone())


# -- values ------------------------------------------------------------------------------


def _draft(
    content: str,
    kind: str,
    keywords: Iterable[str],
    author: str,
    source: Source | None = None,
    expires_at: datetime | None = None,
) -> _Draft:
    text = _clean(content)
    if not text:
        raise InvalidInputError("a memory needs some text")
    if len(text) > MAX_CONTENT:
        raise InvalidInputError(
            f"a memory is at most {MAX_CONTENT} characters and this one has {len(text)}; "
            "keep one durable fact per memory"
        )
    kind = kind.strip().lower()
    if not _KIND.fullmatch(kind):
        raise InvalidInputError(f"kind must be one short word, such as {', '.join(KINDS)}")
    words = _clean_keywords(keywords)
    reason = find_secret(" ".join((text, *words)))
    if reason is not None:
        raise InvalidInputError(refusal(reason))
    author = _clean_author(author)
    if not author:
        raise InvalidInputError("a memory needs an author")
    if expires_at is not None:
        _ts(expires_at)  # aware, or a clear error now rather than halfway through a write
    return _Draft(text, kind, words, author, source, expires_at)


def _clean_keywords(keywords: Iterable[str]) -> tuple[str, ...]:
    if isinstance(keywords, str):
        keywords = keywords.split(",")
    found: dict[str, str] = {}
    for keyword in keywords:
        if not isinstance(keyword, str):
            raise InvalidInputError("keywords must be strings")
        word = _clean(keyword)
        if len(word) > MAX_KEYWORD:
            raise InvalidInputError(f"a keyword is at most {MAX_KEYWORD} characters")
        if word:
            found.setdefault(word.casefold(), word)
    if len(found) > MAX_KEYWORDS:
        raise InvalidInputError(f"at most {MAX_KEYWORDS} keywords")
    return tuple(found.values())


def _clean(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def _clean_author(author: str) -> str:
    return _clean(author)[:_MAX_AUTHOR]


def _check(scope: str, via: str) -> None:
    """Programming errors, not user input: a caller that passes these is wrong."""
    if not scope:
        raise ValueError("a memory needs a scope")
    if via not in VIA:
        raise ValueError(f"via must be one of {VIA}, not {via!r}")


def _valid_id(memory_id: int) -> bool:
    return 0 < memory_id <= _MAX_ID


def _content_key(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def _scope_tag(scope: str) -> str:
    """A token for the scope inside the index, so a search reads only its own scope."""
    digest = hashlib.blake2b(scope.encode("utf-8"), digest_size=8).digest()
    return f"scope{int.from_bytes(digest, 'big')}"


def _ts(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("memory timestamps must be aware datetimes")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _audit_entry(row: sqlite3.Row) -> AuditEntry:
    return AuditEntry(
        row["id"],
        row["memory_id"],
        row["action"],
        row["actor"],
        row["via"],
        datetime.fromisoformat(row["at"]),
        None if row["detail"] is None else json.loads(row["detail"]),
    )


def _memory(row: sqlite3.Row) -> Memory:
    session = row["source_session"]
    return Memory(
        id=row["id"],
        scope=row["scope"],
        content=row["content"],
        kind=row["kind"],
        keywords=tuple(json.loads(row["keywords"])),
        author=row["author"],
        source=None if session is None else Source(session, row["source_message"]),
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        expires_at=None if row["expires_at"] is None else datetime.fromisoformat(row["expires_at"]),
        status=row["status"],
        superseded_by=row["superseded_by"],
    )


def _parse_record(number: int, line: str) -> _Imported:
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
        if memory_id is not None and (type(memory_id) is not int or not _valid_id(memory_id)):
            raise ValueError("id must be a positive integer")
        if source is not None:
            message = source.get("message") if isinstance(source, dict) else None
            if not isinstance(source, dict) or not isinstance(source.get("session"), str):
                raise ValueError("source must be {session, message}")
            if message is not None and type(message) is not int:
                raise ValueError("source.message must be an integer")
            source = Source(source["session"], message)
        created = _parse_time(data["created_at"])
        updated = _parse_time(data.get("updated_at", data["created_at"]))
        expires = None if data.get("expires_at") is None else _parse_time(data["expires_at"])
    except (ValueError, KeyError, TypeError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InvalidInputError(f"line {number} is not a memory: {detail}") from None
    try:
        draft = _draft(content, kind, keywords, author, source, expires)
    except InvalidInputError as exc:
        raise InvalidInputError(f"line {number}: {exc}") from None
    return _Imported(number, memory_id, draft, created, updated)


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("timestamps must be ISO 8601 strings")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone")
    return moment
