"""`lore import chatgpt|claude|markdown`: history from elsewhere becomes archived sessions
(with their own dates, title and source) and notes, searchable, idempotent and undoable,
on SQLite and on PostgreSQL. Fixtures in tests/fixtures/import/ are in the real formats."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from lore.cli import main
from lore.runtime import Runtime, build
from lore.sessions.export_formats import read_export
from tests.postgres_server import storage  # noqa: F401

FIXTURES = Path(__file__).parent / "fixtures" / "import"
CHATGPT = FIXTURES / "chatgpt-conversations.json"
CLAUDE = FIXTURES / "claude-conversations.json"
VAULT = FIXTURES / "vault"


@pytest.fixture
def cli(lore: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """The command line on the same storage as `lore` (its database too, on PostgreSQL)."""
    if lore.config.database_url:
        monkeypatch.setenv("LORE_DATABASE_URL", lore.config.database_url)
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    return lore


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    return json.loads(_run(capsys, *args, "--json"))


# -- reading the formats ------------------------------------------------------------------


def test_chatgpt_keeps_the_branch_the_user_last_saw_without_system_tool_or_hidden_messages() -> (
    None
):
    export = read_export("chatgpt", CHATGPT)
    visa, hualien, train = export.conversations
    assert visa.title == "Visa for the Japan trip"
    assert [m["content"] for m in visa.messages] == [
        "Do I need a visa to visit Japan in April?",
        "It depends on your passport. Which country issued it?",
        "A Taiwanese passport, staying 10 days.",  # the edited turn, not "A German one"
        "With a Taiwanese passport you can visit Japan visa-free for up to 90 days.",
    ]
    assert [m["role"] for m in visa.messages] == ["user", "assistant", "user", "assistant"]
    assert visa.messages[0]["timestamp"] == "2024-03-01T10:00:01+00:00"
    assert visa.created_at.isoformat() == "2024-03-01T10:00:00.123456+00:00"
    assert hualien.messages[2]["content"] == "这张照片是哪里？"  # the image part left out
    assert train.title == "Билеты на поезд"
    assert [s.reason for s in export.skipped] == [
        "not a chatgpt conversation (no 'mapping')",
        "no user or assistant message with text",
    ]


def test_chatgpt_reads_the_export_zip_and_a_file_cut_off_part_way(tmp_path: Path) -> None:
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("chat.html", "<html></html>")
        z.writestr("conversations.json", CHATGPT.read_text(encoding="utf-8"))
    assert len(read_export("chatgpt", archive).conversations) == 3

    text = CHATGPT.read_text(encoding="utf-8")
    cut = tmp_path / "conversations.json"
    cut.write_text(text[: text.index("Билеты на поезд") + 40], encoding="utf-8")
    export = read_export("chatgpt", tmp_path)  # the folder holding conversations.json
    assert [c.title for c in export.conversations] == ["Visa for the Japan trip", "花莲旅行计划"]
    assert "cut off or damaged" in export.skipped[-1].reason


def test_claude_reads_text_and_content_parts_with_iso_times() -> None:
    export = read_export("claude", CLAUDE)
    passport, japanese, borscht = export.conversations
    assert passport.title == "Renewing my passport before the visa"
    assert [m["content"] for m in passport.messages][2:] == [
        "How long does a renewal take?",  # only in `content`, beside an image
        "Usually four to six weeks.",  # only in `text`
    ]
    assert passport.messages[0]["timestamp"] == "2024-02-14T08:30:05+00:00"
    assert japanese.messages[0]["content"] == "我想在三个月内学会基础日语，怎么安排？"
    assert borscht.messages[1]["role"] == "assistant"
    assert len(export.skipped) == 2


def test_markdown_keeps_front_matter_and_skips_hidden_folders_and_unreadable_notes(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(VAULT, vault)
    (vault / "Latin1.md").write_bytes(b"caf\xe9 au lait\n")  # not UTF-8
    export = read_export("markdown", vault)
    assert sorted(n.relative for n in export.notes) == [
        "Travel/Japan visa.md",
        "Рецепты.md",
        "日记/2024-06-11.md",
    ]
    visa = next(n for n in export.notes if n.relative.startswith("Travel"))
    assert visa.text.startswith("---\ntags: [travel, visa]")
    assert {s.item: s.reason for s in export.skipped} == {
        "Empty.md": "empty",
        "Latin1.md": "not UTF-8 text",
    }


def test_an_export_with_nothing_readable_is_one_line_and_writes_nothing(
    cli: Runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_text('{"not": "an export"', encoding="utf-8")
    capsys.readouterr()
    assert main(["import", "chatgpt", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not JSON" in err
    assert cli.sessions.archive.entries() == []
    assert not (cli.config.home / "imports").exists()


# -- what an import makes -----------------------------------------------------------------


def test_imported_conversations_are_archived_sessions_with_their_dates_title_and_source(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "import", "chatgpt", str(CHATGPT))
    assert "Imported 3 conversations (10 messages)" in out
    assert "Skipped conversation 4 (A conversation whose tree was lost)" in out
    listed = _json(capsys, "sessions", "list")
    assert isinstance(listed, list)
    by_title = {s["title"]: s for s in listed}
    visa = by_title["Visa for the Japan trip"]
    assert visa["source"] == "chatgpt" and visa["key"] == "cli:default"
    assert visa["created_at"] == "2024-03-01T10:00:00+00:00"
    assert visa["ended_at"].startswith("2024-03-01") and visa["message_count"] == 4
    assert set(by_title) == {"Visa for the Japan trip", "花莲旅行计划", "Билеты на поезд"}
    text = _run(capsys, "sessions", "list")
    assert "title: 花莲旅行计划 · imported from chatgpt" in text
    # No summary is pending for them: nothing is sent to the model on the next start.
    assert build(cli.config).sessions.recover(min_age=0) == []
    assert cli.sessions.live_keys() == []


@pytest.mark.parametrize(
    ("query", "year", "found"),
    [
        ("visa", "2024", "Taiwanese passport"),
        ("花莲", "2024", "花莲"),
        ("билеты", "2024", "РЖД"),
    ],
    ids=["en", "zh", "ru"],
)
def test_imported_history_is_searchable_by_its_own_dates(
    cli: Runtime, capsys: pytest.CaptureFixture[str], query: str, year: str, found: str
) -> None:
    _run(capsys, "import", "chatgpt", str(CHATGPT))
    hits = json.dumps(_json(capsys, "memory", "search", query, "--when", year), ensure_ascii=False)
    assert found in hits
    later = json.dumps(_json(capsys, "memory", "search", query, "--when", "2025"))
    assert "chatgpt" not in later and found not in later


def test_importing_the_same_export_twice_adds_nothing(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _json(capsys, "import", "claude", str(CLAUDE))
    again = _run(capsys, "import", "claude", str(CLAUDE))
    assert isinstance(first, dict) and first["conversations"] == 3
    assert "Nothing new to import (3 items already here)" in again
    assert len(cli.sessions.archive.entries()) == 3
    imports = _json(capsys, "import", "list")
    assert isinstance(imports, list) and len(imports) == 1


def test_dry_run_prints_counts_and_titles_and_writes_nothing(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "import", "claude", str(CLAUDE), "--dry-run")
    assert "Would import 3 conversations (8 messages)" in out
    assert "  学习日语的方法" in out and "Skipped conversation 5 (Damaged)" in out
    assert cli.sessions.archive.entries() == []
    assert not (cli.config.home / "imports").exists()


def test_since_leaves_out_older_conversations(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _json(capsys, "import", "chatgpt", str(CHATGPT), "--since", "2024-06-01")
    assert isinstance(done, dict)
    assert done["titles"] == ["花莲旅行计划", "Билеты на поезд"] and done["before_since"] == 1


def test_markdown_notes_become_notes_under_imported_and_are_searchable(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, "import", "markdown", str(VAULT))
    imported = cli.config.workspace / "memory" / "imported"
    note = imported / "Travel" / "Japan visa.md"
    assert note.read_text(encoding="utf-8") == (VAULT / "Travel" / "Japan visa.md").read_text(
        encoding="utf-8"
    )
    assert (imported / "日记" / "2024-06-11.md").is_file()
    hits = json.dumps(_json(capsys, "memory", "search", "борщ"), ensure_ascii=False)
    assert "memory/imported/Рецепты.md" in hits


def test_undo_removes_one_import_whole_and_it_can_be_imported_again(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, "import", "claude", str(CLAUDE))
    done = _json(capsys, "import", "chatgpt", str(CHATGPT))
    notes = _json(capsys, "import", "markdown", str(VAULT))
    assert isinstance(done, dict) and isinstance(notes, dict)
    out = _run(capsys, "import", "undo", str(done["id"])[:6])
    assert "3 sessions and 0 notes" in out
    listed = _json(capsys, "sessions", "list")
    assert isinstance(listed, list) and {s["source"] for s in listed} == {"claude"}
    assert "country issued" not in json.dumps(_json(capsys, "memory", "search", "passport"))

    out = _run(capsys, "import", "undo", str(notes["id"]))
    assert "0 sessions and 3 notes" in out
    assert not (cli.config.workspace / "memory" / "imported").exists()
    records = cli.config.workspace / "memory" / ".notes.jsonl"  # the notes' text, recorded
    assert "Борщ" not in records.read_text(encoding="utf-8")
    assert "Рецепты" not in json.dumps(_json(capsys, "memory", "search", "борщ"))

    again = _json(capsys, "import", "chatgpt", str(CHATGPT))
    assert isinstance(again, dict) and again["conversations"] == 3
    capsys.readouterr()
    assert again["id"] != done["id"]
    assert main(["import", "undo", str(done["id"])]) == 1  # undone already: one line
    assert "was undone already" in capsys.readouterr().err
    listed_imports = _run(capsys, "import", "list")
    assert f"{done['id']} · " in listed_imports and "(undone " in listed_imports


def test_an_import_stopped_part_way_can_be_undone(
    cli: Runtime, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.sessions import importing

    written = 0
    real = importing._archive_conversation

    def dies_on_the_third(*args: object, **kwargs: object) -> object:
        nonlocal written
        if written == 2:
            raise KeyboardInterrupt
        written += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importing, "_archive_conversation", dies_on_the_third)
    assert main(["import", "chatgpt", str(CHATGPT)]) == 130
    monkeypatch.setattr(importing, "_archive_conversation", real)
    assert len(cli.sessions.archive.entries()) == 2
    records = _json(capsys, "import", "list")
    assert isinstance(records, list) and len(records) == 1
    record = records[0]
    assert record["finished_at"] is None
    assert "stopped part-way" in _run(capsys, "import", "list")
    assert "2 sessions" in _run(capsys, "import", "undo", record["id"])
    assert cli.sessions.archive.entries() == []


def test_importing_again_after_a_stopped_import_brings_in_the_rest(
    cli: Runtime, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.sessions import importing

    written = 0
    real = importing._archive_conversation

    def dies_on_the_third(*args: object, **kwargs: object) -> object:
        nonlocal written
        if written == 2:
            raise KeyboardInterrupt
        written += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importing, "_archive_conversation", dies_on_the_third)
    assert main(["import", "chatgpt", str(CHATGPT)]) == 130
    monkeypatch.setattr(importing, "_archive_conversation", real)
    rest = _json(capsys, "import", "chatgpt", str(CHATGPT))
    assert isinstance(rest, dict)
    assert rest["titles"] == ["Билеты на поезд"] and rest["already_imported"] == 2
    listed = _json(capsys, "sessions", "list")
    assert isinstance(listed, list) and len(listed) == 3
    assert "Nothing new to import" in _run(capsys, "import", "chatgpt", str(CHATGPT))


def test_forget_everywhere_reaches_imported_transcripts_and_notes(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, "import", "chatgpt", str(CHATGPT))
    _run(capsys, "import", "markdown", str(VAULT))
    out = _run(capsys, "forget", "--everywhere", "--phrase", "Taiwanese passport", "--yes")
    assert "no copy is left" in out, out
    for path in cli.config.home.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".md"):
            assert "taiwanese passport" not in path.read_text(encoding="utf-8").casefold(), path
    assert "Taiwanese passport" not in json.dumps(_json(capsys, "memory", "search", "Taiwanese"))
    archive = build(cli.config).sessions.archive  # on PostgreSQL, the transcripts are rows
    stored = [archive.read_messages(entry)[0] for entry in archive.entries()]
    assert len(stored) == 3 and "[forgotten]" in json.dumps(stored)
    assert "taiwanese passport" not in json.dumps(stored, ensure_ascii=False).casefold()


def test_import_copies_nothing_of_the_source_folder_but_its_notes(
    cli: Runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(VAULT, vault)
    _run(capsys, "import", "markdown", str(vault))
    names = {p.name for p in (cli.config.workspace / "memory" / "imported").rglob("*")}
    assert "app.json" not in names and ".obsidian" not in names


def test_an_import_shows_its_progress_on_a_terminal(
    cli: Runtime, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["import", "chatgpt", str(CHATGPT)]) == 0
    shown = terminal.getvalue()
    assert "\rimporting " in shown and " 3/3" in shown
    assert "\rindexing " in shown
    assert "Imported 3 conversations" in capsys.readouterr().out  # the result on stdout


def test_forget_everywhere_reaches_an_imports_record_and_undo_still_works_after(
    cli: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _json(capsys, "import", "chatgpt", str(CHATGPT))
    assert isinstance(done, dict)
    out = _run(capsys, "forget", "--everywhere", "--phrase", "Japan trip", "--yes")
    assert f"imports/{done['id']}.json" in out and "no copy is left" in out, out
    listed = _json(capsys, "sessions", "list")
    assert isinstance(listed, list)
    assert "Visa for the [forgotten]" in {s["title"] for s in listed}
    assert "3 sessions" in _run(capsys, "import", "undo", str(done["id"]))
    assert cli.sessions.archive.entries() == []
    assert list((cli.config.sessions_dir / "archive").glob("*.jsonl")) == []


def test_undo_leaves_a_note_edited_since_or_written_by_another_import(
    cli: Runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    (first / "Travel").mkdir(parents=True)
    (first / "Travel" / "Japan visa.md").write_text("# Japan visa\n\nold text\n")
    (first / "Рецепты.md").write_text("# Рецепты\n\nблины\n")
    _run(capsys, "import", "markdown", str(first))
    imported = cli.config.workspace / "memory" / "imported"
    edited = imported / "Рецепты.md"
    edited.write_text("# Рецепты\n\nблины, и ещё борщ\n", encoding="utf-8")
    second = _json(capsys, "import", "markdown", str(VAULT))  # same paths: -2 names
    assert isinstance(second, dict)
    assert (imported / "Travel" / "Japan visa-2.md").is_file()
    assert "3 notes" in _run(capsys, "import", "undo", str(second["id"]))
    assert (imported / "Travel" / "Japan visa.md").read_text() == "# Japan visa\n\nold text\n"
    assert not (imported / "Travel" / "Japan visa-2.md").exists()
    first_id = _json(capsys, "import", "list")[0]["id"]  # type: ignore[index]
    assert "1 note" in _run(capsys, "import", "undo", str(first_id))  # the edited one stays
    assert "ещё борщ" in edited.read_text(encoding="utf-8")


def test_help_says_memories_are_extracted_only_with_consent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for source in ("chatgpt", "claude", "markdown"):
        with pytest.raises(SystemExit):
            main(["import", source, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        assert "with your consent: before anything is sent" in shown
        assert "--no-extract" in shown and "--yes" in shown


def test_a_backup_keeps_the_imports_so_a_restored_home_imports_nothing_twice(
    cli: Runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if cli.config.database_url:
        pytest.skip("lore backup copies a SQLite home")
    done = _json(capsys, "import", "chatgpt", str(CHATGPT))
    assert isinstance(done, dict)
    saved = tmp_path / "lore-backup.tar.gz"
    _run(capsys, "backup", str(saved))
    _run(capsys, "import", "undo", str(done["id"]))  # the home moves on after the backup
    _run(capsys, "restore", str(saved), "--force")
    assert "Nothing new to import" in _run(capsys, "import", "chatgpt", str(CHATGPT))
    assert "3 sessions" in _run(capsys, "import", "undo", str(done["id"]))
