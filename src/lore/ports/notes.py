"""The notes port: the notes written under memory/ (daily notes, raw archives, session
summaries), the history log consolidation writes and Dream reads, the workspace of curated
files (AGENTS, SOUL, USER, MEMORY.md) and their versions.

A note knows the conversation it came from as a field: who may search it is never read
back from the Markdown it is rendered into. A file under memory/ that no note record
names (one the person wrote) and MEMORY.md belong to the owner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Protocol

from lore.errors import LoreError

__all__ = [
    "OWNER_SCOPE",
    "Commit",
    "Note",
    "NotesStore",
    "GitError",
    "HistoryEntry",
    "HistoryLog",
    "Versions",
    "Workspace",
    "WorkspaceFile",
    "TEMPLATED",
    "template",
]


@dataclass(frozen=True)
class HistoryEntry:
    cursor: int
    timestamp: str  # ISO 8601 with offset
    session_key: str
    content: str


@dataclass(frozen=True)
class WorkspaceFile:
    name: str
    content: str


class GitError(LoreError):
    """A git operation on the workspace failed, or versioning is unavailable."""


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # ISO 8601
    message: str


# The scope of the owner's own notes: no channel prefix, so no conversation key can be it.
OWNER_SCOPE = "owner"


@dataclass(frozen=True)
class Note:
    """A piece of text written into a Markdown file under the workspace."""

    path: str  # the file, relative to the workspace ("memory/2026-11-30.md")
    scope: str  # the conversation it came from; OWNER_SCOPE for the owner's own
    line: int  # the file's line where its text begins
    at: float  # when it was written (Unix seconds)
    title: str  # the heading it sits under ("" for a file of its own)
    text: str


class NotesStore(Protocol):
    """Notes under the workspace's memory/, each recorded with the scope it came from.
    A path outside memory/*.md is a ValueError (nothing written). The suite in
    tests/contract/test_notes_contract.py holds every backend to this."""

    def append(
        self, path: str, text: str, *, scope: str, title: str, at: datetime, file_title: str
    ) -> Note:
        """Add a section (`## title`, a blank line, the text, a blank line) to the file,
        created with `# file_title` and a blank line; the note's `line` is where its text
        begins."""

    def create(self, stem: str, text: str, *, scope: str, at: datetime) -> Note:
        """Write `memory/<stem>.md` (or `<stem>-2.md`, ... up to -99, then a LoreError),
        never overwriting a file; the note begins on line 1."""

    def notes(self, path: str) -> list[Note]:
        """The notes rendered into one file, in order; [] for a file none names."""

    def paths(self) -> set[str]:
        """Every file some note is rendered into."""

    def delete(self, path: str) -> bool:
        """Remove the file and every record naming it (the records first), so its text is
        left nowhere the store keeps it (undoing an import); False when neither was there."""


class HistoryLog(Protocol):
    """Summaries of conversation that left the window, in cursor order. The suite in
    tests/contract/test_history_contract.py holds every backend to this."""

    def append(self, session_key: str, content: str, *, now: datetime) -> HistoryEntry:
        """Durably add `content` (trimmed) under the next cursor (1, 2, ... across every
        key), stamped with `now` to the second in its own offset; a naive `now` is a
        ValueError."""

    def dream_cursor(self) -> int:
        """The last cursor Dream has fully processed (0 before it ever ran)."""

    def set_dream_cursor(self, cursor: int) -> None: ...

    def entries(self, after: int = 0, *, limit: int | None = None) -> list[HistoryEntry]:
        """Entries with cursor > `after`, oldest first, at most `limit` (the oldest)."""

    def recent(
        self, session_key: str, *, after: int | None = None, limit: int = 50
    ) -> list[HistoryEntry]:
        """The newest `limit` entries of one key (after cursor `after`), oldest first."""

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Forget everywhere: pass every entry's content that `match`es through `redact`;
        how many (would) change. A log kept as a file under the home answers 0: forget
        everywhere rewrites the file itself."""


class Workspace(Protocol):
    root: Path

    @property
    def memory_dir(self) -> Path: ...

    def ensure(self) -> None: ...

    def read(self, name: str) -> str | None: ...

    def bootstrap(self) -> list[WorkspaceFile]: ...


class Versions(Protocol):
    """The curated files' history (a git repository of the workspace, when one can be had)."""

    def ensure(self) -> bool:
        """True when the files are (now) versioned; False when they cannot be."""

    def commit(self, paths: list[str], message: str) -> str | None: ...

    def numstat(self, paths: list[str]) -> list[tuple[str, int, int]]: ...

    def revert(self, sha: str, *, keep: list[str], message: str) -> str: ...

    def resolve(self, sha: str) -> str: ...

    def log(
        self, *, limit: int = 10, grep: str | None = None, rev: str = "HEAD"
    ) -> list[Commit]: ...

    def show(self, sha: str, paths: list[str] | None = None) -> str: ...

    def rewrite_history(self, redact: Callable[[bytes], bytes], *, dry_run: bool = False) -> int:
        """Replay every version with `redact` applied; how many versions changed."""


# The curated files created from templates; one still equal to its template is not sent.
TEMPLATED = ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md")

_TEMPLATES: dict[str, str] = {}


def template(name: str) -> str:
    if name not in _TEMPLATES:
        _TEMPLATES[name] = (
            resources.files("lore").joinpath("templates", name).read_text(encoding="utf-8")
        )
    return _TEMPLATES[name]
