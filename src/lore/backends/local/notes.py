"""The local notes store: Markdown files under the workspace's memory/ directory, and
`memory/.notes.jsonl`, one record per note with the scope it came from.

The Markdown is for people; the records say whose each note is, and hold its text, which
is what search indexes. Both are written under one lock, the record first: a reader
never finds a note's text without its record, so it is never shown, even for a moment,
to a conversation it did not come from.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from lore.files import atomic_write, cut_torn_tail, locked_file
from lore.ports.notes import Note

__all__ = ["LocalNotes"]


class LocalNotes:
    def __init__(self, root: Path) -> None:
        self.root = root  # the workspace
        self.dir = root / "memory"
        self.records = self.dir / ".notes.jsonl"
        self._lock = self.dir / ".notes.lock"

    def append(
        self, path: str, text: str, *, scope: str, title: str, at: datetime, file_title: str
    ) -> Note:
        file = self._file(path)
        self.dir.mkdir(parents=True, exist_ok=True)
        with locked_file(self._lock):
            new = not file.exists() or file.stat().st_size == 0
            head = f"# {file_title}\n\n" if new else ""
            lines = 0 if new else _count_lines(file)
            section = f"## {title}\n\n"
            body = text.rstrip("\n") + "\n\n"
            line = lines + _lines(head + section) + 1
            note = Note(path, scope, line, at.timestamp(), title, text)
            self._record(note)
            with file.open("a", encoding="utf-8") as f:
                f.write(head + section + body)
                f.flush()
                os.fsync(f.fileno())
        return note

    def create(self, stem: str, text: str, *, scope: str, at: datetime) -> Note:
        self.dir.mkdir(parents=True, exist_ok=True)
        with locked_file(self._lock):
            for n in range(1, 100):
                name = f"{stem}.md" if n == 1 else f"{stem}-{n}.md"
                (self.dir / name).parent.mkdir(parents=True, exist_ok=True)  # memory/imported/…
                try:
                    handle = (self.dir / name).open("x", encoding="utf-8")
                except FileExistsError:
                    continue
                note = Note(f"memory/{name}", scope, 1, at.timestamp(), "", text)
                with handle:
                    self._record(note)
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                return note
        from lore.errors import LoreError

        raise LoreError(f"cannot name the note {stem}.md: all names taken")

    def notes(self, path: str) -> list[Note]:
        return [note for note in self._read() if note.path == path]

    def paths(self) -> set[str]:
        return {note.path for note in self._read()}

    def delete(self, path: str) -> bool:
        file = self._file(path)
        with locked_file(self._lock):
            notes = self._read()
            kept = [note for note in notes if note.path != path]
            if len(kept) != len(notes):
                lines = (
                    json.dumps(asdict(n), ensure_ascii=False, separators=(",", ":")) + "\n"
                    for n in kept
                )
                atomic_write(self.records, "".join(lines).encode("utf-8"))
            existed = file.exists()
            file.unlink(missing_ok=True)
        return existed or len(kept) != len(notes)

    def _file(self, path: str) -> Path:
        file = (self.root / path).resolve()
        if not file.is_relative_to(self.dir.resolve()) or file.suffix != ".md":
            raise ValueError(f"a note lives in memory/*.md, not {path!r}")
        return file

    def _record(self, note: Note) -> None:
        cut_torn_tail(self.records)
        line = json.dumps(asdict(note), ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.records.open("ab") as f:
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())

    def _read(self) -> list[Note]:
        try:
            raw = self.records.read_bytes()
        except FileNotFoundError:
            return []
        found = []
        for line in raw[: raw.rfind(b"\n") + 1].splitlines():
            try:
                found.append(Note(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a damaged record: its text stays the owner's
        return found


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(65536), b""))


def _lines(text: str) -> int:
    return text.count("\n")
