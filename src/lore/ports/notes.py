"""The notes port: the history log consolidation writes and Dream reads, and the
workspace of curated files (AGENTS, SOUL, USER, MEMORY.md and the notes under memory/).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Protocol

from lore.errors import LoreError

__all__ = [
    "Commit",
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


class HistoryLog(Protocol):
    """Summaries of conversation that left the window, in cursor order."""

    def append(self, session_key: str, content: str, *, now: datetime) -> HistoryEntry: ...

    def dream_cursor(self) -> int: ...

    def set_dream_cursor(self, cursor: int) -> None: ...

    def entries(self, after: int = 0, *, limit: int | None = None) -> list[HistoryEntry]: ...

    def recent(
        self, session_key: str, *, after: int | None = None, limit: int = 50
    ) -> list[HistoryEntry]: ...


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


# The curated files created from templates; one still equal to its template is not sent.
TEMPLATED = ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md")

_TEMPLATES: dict[str, str] = {}


def template(name: str) -> str:
    if name not in _TEMPLATES:
        _TEMPLATES[name] = (
            resources.files("lore").joinpath("templates", name).read_text(encoding="utf-8")
        )
    return _TEMPLATES[name]
