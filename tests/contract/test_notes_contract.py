"""What every NotesStore does: sections appended to a file and files created whole, each
note recorded with the scope it came from and the line its text begins on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lore.errors import LoreError
from lore.ports.notes import OWNER_SCOPE, NotesStore
from tests.contract.conftest import Backend

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "line:group:family"
DAY = "memory/2026-11-30.md"


@pytest.fixture
def notes(backend: Backend) -> NotesStore:
    return backend.notes


def test_the_first_section_of_a_file_starts_after_its_heading(notes: NotesStore) -> None:
    note = notes.append(
        DAY,
        "John plans a trip to 花莲.",
        scope=HOME,
        title="17:00 · trip",
        at=AT,
        file_title="2026-11-30",
    )
    assert (note.path, note.scope, note.title, note.text) == (
        DAY,
        HOME,
        "17:00 · trip",
        "John plans a trip to 花莲.",
    )
    assert (note.line, note.at) == (5, AT.timestamp())  # "# 2026-11-30", "", "## …", ""
    assert notes.notes(DAY) == [note]
    assert notes.paths() == {DAY}


def test_each_section_keeps_its_own_scope_and_line(notes: NotesStore) -> None:
    first = notes.append(
        DAY, "line one\nline two\n", scope=HOME, title="a", at=AT, file_title="2026-11-30"
    )
    later = AT + timedelta(hours=1)
    second = notes.append(
        DAY,
        "Семья едет в Казань",
        scope=GROUP,
        title="b",
        at=later,
        file_title="ignored once the file exists",
    )
    # The first section: its two lines, then a blank one; then "## b" and a blank line.
    assert second.line == first.line + 3 + 2
    assert [(n.scope, n.text) for n in notes.notes(DAY)] == [
        (HOME, "line one\nline two\n"),
        (GROUP, "Семья едет в Казань"),
    ]


def test_create_writes_a_new_file_and_never_overwrites_one(notes: NotesStore) -> None:
    first = notes.create("trip-plan", "# 花莲之旅\n\n火车票已订", scope=OWNER_SCOPE, at=AT)
    second = notes.create("trip-plan", "# Поездка\n", scope=HOME, at=AT)
    assert (first.path, first.line, first.title, first.scope) == (
        "memory/trip-plan.md",
        1,
        "",
        OWNER_SCOPE,
    )
    assert second.path == "memory/trip-plan-2.md"
    assert notes.notes(first.path) == [first] and notes.notes(second.path) == [second]
    assert notes.paths() == {first.path, second.path}


def test_a_file_no_note_names_has_no_notes(notes: NotesStore) -> None:
    assert notes.notes("memory/never.md") == [] and notes.paths() == set()


@pytest.mark.parametrize("path", ["../outside.md", "memory/../../etc/x.md", "memory/x.txt"])
def test_a_path_outside_memory_markdown_is_refused_and_nothing_recorded(
    notes: NotesStore, path: str
) -> None:
    with pytest.raises(ValueError, match="memory/"):
        notes.append(path, "x", scope=HOME, title="t", at=AT, file_title="t")
    assert notes.paths() == set()


def test_notes_written_by_one_process_are_read_by_another(backend: Backend) -> None:
    note = backend.notes.append(DAY, "记住这个", scope=GROUP, title="t", at=AT, file_title="d")
    assert backend.reopen().notes.notes(DAY) == [note]


def test_a_stem_with_every_name_taken_is_an_error(notes: NotesStore) -> None:
    for _ in range(99):
        notes.create("busy", "x", scope=HOME, at=AT)
    with pytest.raises(LoreError, match="all names taken"):
        notes.create("busy", "x", scope=HOME, at=AT)


def test_create_makes_the_folders_of_a_stem_below_memory(backend: Backend) -> None:
    note = backend.notes.create("imported/日记/2024-06-11", "# 花莲\n", scope=HOME, at=AT)
    assert note.path == "memory/imported/日记/2024-06-11.md"
    assert backend.reopen().notes.notes(note.path) == [note]


def test_a_deleted_file_leaves_no_record_and_the_others_stay(backend: Backend) -> None:
    gone = backend.notes.create("imported/visa", "Taiwanese passports", scope=HOME, at=AT)
    kept = backend.notes.append(DAY, "记住这个", scope=GROUP, title="t", at=AT, file_title="d")
    assert backend.notes.delete(gone.path) is True
    reopened = backend.reopen().notes
    assert reopened.notes(gone.path) == [] and reopened.paths() == {DAY}
    assert reopened.notes(DAY) == [kept]
    assert backend.notes.delete(gone.path) is False  # again: nothing left
    again = backend.notes.create("imported/visa", "new text", scope=HOME, at=AT)
    assert again.path == gone.path  # the name is free again
    with pytest.raises(ValueError, match="memory/"):
        backend.notes.delete("../outside.md")
