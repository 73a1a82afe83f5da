"""`lore import nanobot|openclaw|mem0`: another agent's memory brought in. Sessions become
archived conversations, curated files notes, kept facts memories that link to their
archived message (each checked as any memory is: a secret or an oversize one is skipped
with its reason and written nowhere); idempotent and undoable, on SQLite and PostgreSQL.
The fixtures in tests/fixtures/import/ are in the formats those agents write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main
from lore.runtime import Runtime
from lore.sessions.export_formats import read_export
from tests.postgres_server import storage  # noqa: F401

FIXTURES = Path(__file__).parent / "fixtures" / "import"
NANOBOT = FIXTURES / "nanobot"
OPENCLAW = FIXTURES / "openclaw"
MEM0 = FIXTURES / "mem0-memories.json"
SECRET = "sk-proj-4fG7hJ2kL9mN3pQ6rS8tU1vW5xY0zA2bC4dE6fG8"


@pytest.fixture
def cli(lore: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    if lore.config.database_url:
        monkeypatch.setenv("LORE_DATABASE_URL", lore.config.database_url)
    monkeypatch.setenv("LORE_TIMEZONE", "UTC")
    return lore


def _run(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> str:
    capsys.readouterr()
    assert main(list(args)) == code, capsys.readouterr().err
    return capsys.readouterr().out


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    return json.loads(_run(capsys, *args, "--json"))


# -- reading the formats ------------------------------------------------------------------


def test_nanobot_sessions_leave_out_tool_calls_and_images_and_name_damaged_lines() -> None:
    export = read_export("nanobot", NANOBOT)
    by_title = {c.title: c for c in export.conversations}
    trip = by_title["Hualien trip"]
    assert [m["content"] for m in trip.messages] == [
        "Which train goes to Hualien on Saturday morning?",
        "The Taroko Express leaves Taipei at 08:10 on Saturday.",  # the tool call left out
        "这张票还有吗？",  # its image part left out
        "还有，建议今天就订。",
    ]
    assert trip.external_id == "telegram:12345" and not trip.facts
    assert trip.messages[0]["timestamp"].startswith("2026-03-02T21:00:01")
    borscht = by_title["cli:direct"]  # no title: its key
    assert borscht.messages[1]["content"].startswith("Свёкла")
    assert {s.item: s.reason for s in export.skipped} == {
        "sessions/a1b2c3d4/cli_direct.jsonl": "1 damaged line(s) left out",
        "sessions/a1b2c3d4/cli_empty.jsonl": "no user or assistant message with text",
        "memory/history.jsonl line 3": "damaged",
    }


def test_nanobot_memory_files_are_notes_and_their_bullets_facts() -> None:
    export = read_export("nanobot", NANOBOT / "workspace")  # the workspace alone also reads
    facts = next(c for c in export.conversations if c.facts)
    assert [m["content"] for m in facts.messages] == [
        "Name: Mei Lin, lives in Taipei",
        "Prefers answers in Traditional Chinese for family topics",
        "女儿小雨在读三年级",
        "Renovating the balcony garden; tomatoes planted in March",
        "Учит русский язык по вторникам",
    ]
    notes = {n.relative: n for n in export.notes}
    assert set(notes) == {
        "nanobot/USER.md",
        "nanobot/SOUL.md",
        "nanobot/memory/MEMORY.md",
        "nanobot/history.md",
    }
    history = notes["nanobot/history.md"]
    assert "## 2026-03-02 21:14" in history.text and "dark mode" in history.text
    assert history.modified_at.isoformat().startswith("2026-04-03T00:02")


def test_openclaw_daily_logs_are_dated_by_their_names_and_hidden_folders_left_out() -> None:
    export = read_export("openclaw", OPENCLAW)
    notes = {n.relative: n for n in export.notes}
    assert set(notes) == {
        "openclaw/MEMORY.md",
        "openclaw/memory/2026-03-28.md",
        "openclaw/memory/projects/garden.md",
    }
    assert notes["openclaw/memory/2026-03-28.md"].modified_at.isoformat() == (
        "2026-03-28T12:00:00+00:00"
    )
    assert "Олей" in notes["openclaw/memory/2026-03-28.md"].text
    assert not export.conversations


def test_mem0_memories_are_facts_and_a_secret_or_oversize_one_is_skipped_without_its_text() -> None:
    export = read_export("mem0", MEM0)
    (facts,) = export.conversations
    assert facts.facts and facts.title == "mem0 memories (alice)"
    assert [m["content"] for m in facts.messages] == [
        "Is vegetarian and allergic to peanuts",
        "养了一只叫豆豆的柯基",
        "Живёт в Санкт-Петербурге с 2019 года",
    ]
    assert facts.messages[0]["timestamp"] == "2024-07-20T01:23:45-07:00"
    reasons = {s.item: s.reason for s in export.skipped}
    assert set(reasons) == {"memory 4", "memory 5", "memory 6"}
    assert "API key" in reasons["memory 4"]
    assert "at most 500 characters" in reasons["memory 5"]
    assert reasons["memory 6"] == "no 'memory' text"
    assert SECRET not in repr(export)


@pytest.mark.parametrize(
    ("source", "path", "error"),
    [
        ("mem0", FIXTURES / "claude-conversations.json", "no list of memories"),
        ("mem0", FIXTURES / "vault" / "Рецепты.md", "not JSON, not a mem0 export"),
        ("nanobot", MEM0, "a nanobot workspace is a folder"),
        ("openclaw", FIXTURES / "vault", "no MEMORY.md or memory/*.md"),
    ],
)
def test_a_path_that_is_not_the_source_is_one_line_and_writes_nothing(
    cli: Runtime, capsys: pytest.CaptureFixture[str], source: str, path: Path, error: str
) -> None:
    capsys.readouterr()
    assert main(["import", source, str(path)]) == 1
    said = capsys.readouterr().err.strip()
    assert error in said and "\n" not in said
    assert not (cli.config.home / "imports").exists()


# -- importing ----------------------------------------------------------------------------


def test_mem0_memories_become_lores_dated_and_linked_to_their_archived_message(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "import", "mem0", str(MEM0))
    assert "Imported 3 memories from" in out
    assert "Skipped memory 4: refused: this looks like an API key" in out
    listed = _json(capsys, "memory", "list")
    assert isinstance(listed, list)
    by_text = {m["content"]: m for m in listed}
    corgi = by_text["养了一只叫豆豆的柯基"]
    assert corgi["created_at"].startswith("2024-08-02")
    sessions = _json(capsys, "sessions", "list")
    assert isinstance(sessions, list)
    (archived,) = sessions
    assert archived["title"] == "mem0 memories (alice)" and archived["source"] == "mem0"
    assert corgi["source"] == {"session": archived["session_id"], "message": 1}
    shown = _run(capsys, "sessions", "show", archived["session_id"])
    assert "养了一只叫豆豆的柯基" in shown
    hits = json.dumps(_json(capsys, "memory", "search", "Петербурге"), ensure_ascii=False)
    assert "Санкт-Петербурге" in hits
    # The refused secret is nowhere: not in the memories, the archive or the import's record.
    for path in cli.config.home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_importing_mem0_again_adds_nothing_and_undo_keeps_a_memory_corrected_since(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _json(capsys, "import", "mem0", str(MEM0))
    assert isinstance(done, dict) and done["memories_new"] == 3
    assert "Nothing new to import" in _run(capsys, "import", "mem0", str(MEM0))
    listed = _json(capsys, "memory", "list")
    assert isinstance(listed, list) and len(listed) == 3
    peanut = next(m for m in listed if "peanuts" in m["content"])
    now = cli.clock.now()
    corrected = cli.memory.supersede(
        "cli:default", peanut["id"], "Is vegan and allergic to peanuts",
        author="john", via="cli", now=now,
    )  # fmt: skip
    out = _run(capsys, "import", "undo", str(done["id"]))
    assert "1 session, 0 notes and 2 memories" in out
    left = _json(capsys, "memory", "list")
    assert isinstance(left, list)
    assert [m["content"] for m in left] == ["Is vegan and allergic to peanuts"]
    assert left[0]["id"] == corrected.id
    again = _json(capsys, "import", "mem0", str(MEM0))
    assert isinstance(again, dict) and again["memories_new"] == 3


def test_a_nanobot_workspace_brings_sessions_notes_and_memories(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "import", "nanobot", str(NANOBOT))
    assert "Imported 2 conversations (6 messages), 5 memories, 4 notes from" in out
    text = _run(capsys, "sessions", "list")
    assert "title: Hualien trip · imported from nanobot" in text
    imported = cli.config.workspace / "memory" / "imported" / "nanobot"
    assert (imported / "USER.md").read_text(encoding="utf-8").startswith("# User")
    assert "dark mode" in (imported / "history.md").read_text(encoding="utf-8")
    memories = _json(capsys, "memory", "list")
    assert isinstance(memories, list)
    assert "女儿小雨在读三年级" in {m["content"] for m in memories}
    hits = json.dumps(_json(capsys, "memory", "search", "борщ"), ensure_ascii=False)
    assert "Свёкла" in hits
    record = _json(capsys, "import", "list")
    assert isinstance(record, list)
    out = _run(capsys, "import", "undo", str(record[0]["id"]))
    assert "3 sessions, 4 notes and 5 memories" in out
    assert _json(capsys, "memory", "list") == []
    assert not imported.exists()


def test_an_openclaw_workspace_becomes_notes_searchable_by_their_day(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "import", "openclaw", str(OPENCLAW))
    assert "Imported 3 notes from" in out
    hits = json.dumps(
        _json(capsys, "memory", "search", "landlord", "--when", "2026-03-28"), ensure_ascii=False
    )
    assert "plumber" in hits
