"""Notes in memory: each file's Markdown as a string, and one record per note with its
scope, laid out line for line as the local store lays out its files."""

from __future__ import annotations

import posixpath
from datetime import datetime

from lore.errors import LoreError
from lore.ports.notes import Note

__all__ = ["FakeNotes"]


class FakeNotes:
    def __init__(self) -> None:
        self._files: dict[str, str] = {}
        self._records: list[Note] = []

    def append(
        self, path: str, text: str, *, scope: str, title: str, at: datetime, file_title: str
    ) -> Note:
        path = _checked(path)
        existing = self._files.get(path, "")
        head = "" if existing else f"# {file_title}\n\n"
        section = f"## {title}\n\n"
        line = existing.count("\n") + (head + section).count("\n") + 1
        note = Note(path, scope, line, at.timestamp(), title, text)
        self._records.append(note)
        self._files[path] = existing + head + section + text.rstrip("\n") + "\n\n"
        return note

    def create(self, stem: str, text: str, *, scope: str, at: datetime) -> Note:
        for n in range(1, 100):
            path = f"memory/{stem}.md" if n == 1 else f"memory/{stem}-{n}.md"
            if path not in self._files:
                note = Note(path, scope, 1, at.timestamp(), "", text)
                self._records.append(note)
                self._files[path] = text
                return note
        raise LoreError(f"cannot name the note {stem}.md: all names taken")

    def notes(self, path: str) -> list[Note]:
        return [note for note in self._records if note.path == path]

    def paths(self) -> set[str]:
        return {note.path for note in self._records}

    def delete(self, path: str) -> bool:
        path = _checked(path)
        before = len(self._records)
        self._records = [note for note in self._records if note.path != path]
        return self._files.pop(path, None) is not None or len(self._records) != before


def _checked(path: str) -> str:
    normal = posixpath.normpath(path)
    if not normal.startswith("memory/") or not normal.endswith(".md"):
        raise ValueError(f"a note lives in memory/*.md, not {path!r}")
    return normal
