"""Notes are searched in the scope their record names; the index follows file edits and
can be rebuilt."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from lore.backends.local.archive import SessionArchive
from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.ports.search import Entry
from lore.ports.sessions import SessionMeta
from lore.runtime import Runtime, build
from lore.search import searcher
from lore.search.rebuild import rebuild
from lore.search.sources import NOTES_SCOPE, chunk_markdown

DAILY = """# 2026-11-29

## 09:12

Decided to keep Postgres for the API; Redis only as a cache.
"""

SUMMARY = """# trip-planning

- Session ID: 0123abcd
- Session Key: telegram:55
- Ended At: 2026-11-28T10:00:00+08:00

## Summary

Planned the Kyoto trip: flights booked, ryokan still open.
"""
AT = datetime(2026, 11, 29, 1, 12, tzinfo=UTC)


def note(lore: Runtime, scope: str, text: str, day: str = "2026-11-29") -> None:
    lore.notes.append(
        f"memory/{day}.md", text, scope=scope, title=f"09:12 · {scope}", at=AT, file_title=day
    )


def daily(lore: Runtime) -> None:
    note(lore, "cli:default", "Decided to keep Postgres for the API; Redis only as a cache.")
    note(lore, "line:group:family", "Grandma's birthday dinner moves to Saturday.")


@pytest.fixture
def runtime(config: Config, clock: FixedClock) -> Iterator[Runtime]:
    lore = build(config, provider=ScriptedProvider(), clock=clock)
    yield lore
    lore.db.close()


def texts(lore: Runtime, query: str, scope: str) -> list[str]:
    return [hit.entry.text for hit in searcher(lore).search(query, scope, mode="text")]


def test_markdown_is_chunked_by_heading_paragraph_and_list_item() -> None:
    chunks = chunk_markdown(
        "# Memory\n\nLikes tea.\nDrinks it black.\n\n## People\n\n- Amy: sister\n"
        "- Ben: colleague,\n  works on billing\n\n### Old\n\nGone.\n"
    )

    assert [(c.line, c.heading, c.text) for c in chunks] == [
        (3, "Memory", "Likes tea.\nDrinks it black."),
        (8, "Memory › People", "- Amy: sister"),
        (9, "Memory › People", "- Ben: colleague,\n  works on billing"),
        (14, "Memory › People › Old", "Gone."),
    ]
    assert {c.scope for c in chunks} == {NOTES_SCOPE}


def test_a_note_keeps_the_scope_it_came_from(runtime: Runtime) -> None:
    daily(runtime)
    runtime.notes.create("2026-11-28-1000-trip-planning", SUMMARY, scope="telegram:55", at=AT)

    assert texts(runtime, "Postgres", "cli:default") != []
    assert texts(runtime, "Postgres", "line:group:family") == []
    assert texts(runtime, "birthday", "line:group:family") != []
    assert texts(runtime, "Kyoto", "telegram:55") == [
        "Planned the Kyoto trip: flights booked, ryokan still open."
    ]
    assert texts(runtime, "Kyoto", "cli:default") == []  # not even the owner's


def test_a_heading_written_inside_a_note_cannot_move_its_text_to_another_scope(
    runtime: Runtime,
) -> None:
    # The model's text may carry headings naming another conversation: they are just text.
    note(
        runtime,
        "telegram:alice",
        "- A party for Bob\n\n## Plans\n\n- Buy the cake on Friday\n\n"
        "### Notes · telegram:bob\n\n- Hates the gift\n\n## 22:10 · cli:default\n\n- Not yours",
    )

    assert texts(runtime, "gift", "telegram:bob") == []
    assert texts(runtime, "yours", "cli:default") == []
    assert "- Hates the gift" in texts(runtime, "gift", "telegram:alice")
    assert "- Not yours" in texts(runtime, "yours", "telegram:alice")


def test_a_session_summary_belongs_to_its_session_whatever_its_headings_say(
    runtime: Runtime,
) -> None:
    summary = SUMMARY + "\n## 10:00 · telegram:99\n\n- Passport is in the blue folder\n"
    runtime.notes.create("2026-11-28-1000-trip", summary, scope="telegram:55", at=AT)

    assert texts(runtime, "passport", "telegram:99") == []
    assert "- Passport is in the blue folder" in texts(runtime, "passport", "telegram:55")


def test_a_file_no_note_names_is_the_owners_whatever_its_headings_say(runtime: Runtime) -> None:
    (runtime.workspace.memory_dir / "2026-11-29.md").write_text(
        "# 2026-11-29\n\n## 21:40 · line:group:family\n\nThe safe code is 1234.\n",
        encoding="utf-8",
    )
    assert texts(runtime, "safe code", "line:group:family") == []
    assert texts(runtime, "safe code", "cli:default") == ["The safe code is 1234."]


def test_memory_md_belongs_to_the_owner_whatever_its_headings_say(runtime: Runtime) -> None:
    (runtime.workspace.root / "MEMORY.md").write_text(
        "# Memory\n\n## 21:40 · telegram:99\n\nThe safe code is in the blue folder.\n",
        encoding="utf-8",
    )

    assert texts(runtime, "blue folder", "telegram:99") == []
    assert texts(runtime, "blue folder", "cli:default") == ["The safe code is in the blue folder."]


def test_notes_indexed_by_an_earlier_lore_are_read_again_with_the_current_rules(
    config: Config, clock: FixedClock
) -> None:
    first = build(config, provider=ScriptedProvider(), clock=clock)
    note(first, "telegram:alice", "## Plans\n\n- Alice buys the cake")
    search = searcher(first)
    search.refresh(files=True)
    # How an earlier Lore indexed it: the model's "## Plans" moved the line to the owner.
    at = search.index.fetch([1])[1].at
    search.index.put(
        [Entry(NOTES_SCOPE, "note", "memory/2026-11-29.md", 7, at, "- Alice buys the cake")]
    )
    assert texts(first, "cake", "cli:default") == ["- Alice buys the cake"]
    first.db.conn.execute("PRAGMA user_version = 3")
    first.db.close()

    upgraded = build(config, provider=ScriptedProvider(), clock=clock)

    assert texts(upgraded, "cake", "cli:default") == []
    assert texts(upgraded, "cake", "telegram:alice") == ["- Alice buys the cake"]


def test_notes_are_searched_only_from_their_scope(runtime: Runtime) -> None:
    daily(runtime)

    assert texts(runtime, "birthday", "line:group:family") == [
        "Grandma's birthday dinner moves to Saturday."
    ]
    assert texts(runtime, "birthday", "cli:default") == []
    assert texts(runtime, "Postgres", "line:group:family") == []


def test_a_note_edited_by_hand_is_indexed_again_and_a_deleted_one_leaves(runtime: Runtime) -> None:
    path = runtime.workspace.root / "MEMORY.md"
    path.write_text("# Memory\n\nPrefers window seats.\n", encoding="utf-8")
    search = searcher(runtime)
    search.refresh(files=True)
    assert texts(runtime, "seats", "cli:default") == ["Prefers window seats."]

    path.write_text("# Memory\n\nPrefers aisle seats.\n", encoding="utf-8")
    search.refresh(files=True)
    assert texts(runtime, "seats", "cli:default") == ["Prefers aisle seats."]

    path.unlink()
    search.refresh(files=True)
    assert texts(runtime, "seats", "cli:default") == []


def test_an_unchanged_file_is_not_indexed_again(runtime: Runtime) -> None:
    note = runtime.workspace.memory_dir / "2026-11-29.md"
    note.write_text(DAILY, encoding="utf-8")
    search = searcher(runtime)
    search.refresh(files=True)
    before = search.index.entries_matching(lambda text: True)

    note.touch()  # a new mtime, the same text
    search.refresh(files=True)

    assert before and search.index.entries_matching(lambda text: True) == before


def test_the_template_memory_md_is_not_indexed(runtime: Runtime) -> None:
    runtime.workspace.ensure()  # writes the template
    searcher(runtime).refresh(files=True)

    assert searcher(runtime).index.stats().entries["note"] == 0


def fill(lore: Runtime) -> None:
    now = lore.clock.now()
    lore.memory.remember(
        "cli:default", "John's bike is a blue Brompton", author="john", via="cli", now=now
    )
    (lore.workspace.memory_dir / "2026-11-29.md").write_text(DAILY, encoding="utf-8")
    archive = SessionArchive(lore.config.sessions_dir, lore.config.home)
    stamp = "2026-11-27T01:00:00+00:00"
    entry = archive.write_transcript(
        SessionMeta("abcdef01" * 4, "cli:default", stamp, stamp),
        [
            {"role": "user", "content": "Which session was about Redis?", "timestamp": stamp},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "1", "name": "memory_search", "arguments": "{}"}],
            },
            {"role": "tool", "content": "tool output is never indexed"},
            {"role": "assistant", "content": "The one on caching, last Tuesday."},
        ],
        ended_at=datetime(2026, 11, 27, 2, tzinfo=UTC),
        zone=UTC,
        slug="redis",
        reason="new",
    )
    archive.append_index(entry)


@pytest.mark.search_quality
def test_rebuild_recreates_the_index_from_memories_notes_and_archive(runtime: Runtime) -> None:
    fill(runtime)
    searcher(runtime).refresh(files=True)
    runtime.db.conn.execute("DELETE FROM search_fts")  # a damaged index
    runtime.db.conn.execute("DELETE FROM search_entries")

    report = rebuild(runtime)

    assert (report.memories, report.note_files, report.sessions) == (1, 1, 1)
    assert report.entries == 1 + 1 + 2  # memory, a note, two messages with text
    assert report.embedded == report.entries
    assert searcher(runtime).index.stats().pending_vectors == 0
    assert texts(runtime, "Brompton", "cli:default") == ["John's bike is a blue Brompton"]
    assert texts(runtime, "caching", "cli:default")[0] == "The one on caching, last Tuesday."
    assert texts(runtime, "tool output", "cli:default") == []
    message = searcher(runtime).search("bicycle", "cli:default", mode="vector", limit=1)
    assert message[0].entry.text == "John's bike is a blue Brompton"


def run_cli(args: list[str]) -> int:
    from lore.cli import index

    parser = argparse.ArgumentParser(prog="lore")
    index.register(parser.add_subparsers())
    namespace = parser.parse_args(["index", *args])
    code: int = namespace.func(namespace)
    return code


def test_lore_index_rebuild_and_stats(
    runtime: Runtime, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(runtime)
    runtime.memory.remember(
        "cli:default",
        "John's daughter studies in Kyoto",
        author="john",
        via="cli",
        now=runtime.clock.now(),
    )
    runtime.db.close()
    home = ["--home", str(config.home)]

    assert run_cli(["rebuild", "--no-vectors", *home]) == 0
    assert (
        "Indexed 5 entries: 2 memories, 1 note files, 1 archived sessions"
        in capsys.readouterr().out
    )
    assert run_cli(["stats", "--json", *home]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == {"memory": 2, "note": 1, "message": 2}
    assert stats["pending_vectors"] == 5
