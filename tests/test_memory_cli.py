"""`lore memory list|add|forget|search|export|import`, run in-process against LORE_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main


@pytest.fixture(autouse=True)
def _user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_USER", "john")
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    code, out, _ = run(capsys, "list", "--json", *argv)
    assert code == 0
    records: list[dict[str, object]] = json.loads(out)
    return records


def assert_one_line_error(code: int, out: str, err: str, message: str) -> None:
    assert code == 1 and out == ""
    assert err.startswith("lore: ") and err.count("\n") == 1 and message in err


def test_add_then_list_shows_the_memory(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "add", "John lives in Hualien", "--kind", "profile")
    assert (code, out) == (0, "Noted #1: John lives in Hualien\n")
    code, out, _ = run(capsys, "list")
    assert code == 0 and out.startswith("#1 [profile] John lives in Hualien (noted by john, 20")


def test_list_json_gives_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "add", "我每天早上喝美式咖啡", "--keyword", "提神", "--keyword", "coffee")
    (record,) = listed(capsys)
    assert {k: record[k] for k in ("id", "kind", "content", "keywords", "author", "source")} == {
        "id": 1,
        "kind": "fact",
        "content": "我每天早上喝美式咖啡",
        "keywords": ["提神", "coffee"],
        "author": "john",
        "source": None,
    }
    assert record["expires_at"] is None and str(record["created_at"]).endswith("+00:00")
    assert json.loads(run(capsys, "add", "我每天早上喝美式咖啡", "--json")[1])["created"] is False


def test_search_finds_by_keyword_and_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "add", "我每天早上喝美式咖啡", "--keyword", "提神")
    run(capsys, "add", "John lives in Hualien")
    code, out, _ = run(capsys, "search", "提神", "--json")
    first = json.loads(out)[0]
    assert code == 0 and first["text"] == "我每天早上喝美式咖啡"
    assert first["source"] == {"kind": "memory", "memory_id": 1} and "text" in first["matched"]
    empty = run(capsys, "search", "茶", "--session", "cli:empty")[1]
    assert empty == "Nothing found for '茶' in cli:empty.\n"


def test_forget_erases_from_list_and_search(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "add", "John lives in Hualien")
    assert run(capsys, "forget", "#1") == (
        0,
        "Forgot #1. What you said stays in the conversation's transcript; "
        "`forget everywhere` erases that too.\n",
        "",
    )
    assert listed(capsys) == []
    assert run(capsys, "search", "Hualien")[1].startswith("Nothing found")


def test_each_scope_lists_only_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "add", "family dinner on Sundays", "--scope", "line:group:family")
    assert listed(capsys) == []
    assert [r["content"] for r in listed(capsys, "--session", "line:group:family")] == [
        "family dinner on Sundays"
    ]
    assert_one_line_error(*run(capsys, "forget", "1"), "no memory #1 in this conversation")


def test_expires_takes_a_date_and_lasts_through_that_local_day(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys, "add", "Mom visits this week", "--expires", "2099-12-31")
    (record,) = listed(capsys)
    assert record["expires_at"] == "2099-12-31T16:00:00.000000+00:00"  # midnight in Taipei


def test_export_then_import_round_trips_exactly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "add", "John lives in Hualien", "--kind", "profile")
    run(capsys, "add", "我每天早上喝美式咖啡", "--keyword", "提神", "--expires", "2099-01-01")
    run(capsys, "add", "temporary")
    run(capsys, "forget", "3")
    code, exported, _ = run(capsys, "export")
    assert code == 0 and len(exported.splitlines()) == 2

    dump = tmp_path / "memories.jsonl"
    assert run(capsys, "export", "-o", str(dump))[0] == 0
    assert dump.read_text(encoding="utf-8") == exported
    other = str(tmp_path / "other-home")
    code, out, _ = run(capsys, "import", str(dump), "--home", other)
    assert (code, out) == (0, "Imported 2 memories.\n")
    assert run(capsys, "export", "--home", other)[1] == exported
    assert run(capsys, "import", str(dump), "--home", other)[1] == (
        "Imported 0 memories (2 already present).\n"
    )


def test_an_export_saved_again_by_an_editor_with_a_byte_order_mark_imports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "add", "John lives in Hualien")
    exported = run(capsys, "export")[1]
    dump = tmp_path / "edited.jsonl"
    dump.write_text(exported, encoding="utf-8-sig")  # what Windows Notepad writes
    code, out, _ = run(capsys, "import", str(dump), "--home", str(tmp_path / "other"))
    assert (code, out) == (0, "Imported 1 memories.\n")


def test_content_over_500_characters_is_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert_one_line_error(*run(capsys, "add", "x" * 501), "at most 500 characters")
    assert listed(capsys) == []


def test_a_secret_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run(capsys, "add", "my password is hunter22"), "password manager")
    assert listed(capsys) == []


@pytest.mark.parametrize(
    ("memory_id", "message"),
    [
        ("42", "no memory #42"),
        ("abc", "not a memory number"),
        ("²", "not a memory number"),
        ("99999999999999999999999", "no memory #99999999999999999999999"),
    ],
)
def test_forgetting_an_unknown_id_is_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], memory_id: str, message: str
) -> None:
    run(capsys, "add", "John lives in Hualien")
    assert_one_line_error(*run(capsys, "forget", memory_id), message)
    assert len(listed(capsys)) == 1


def test_a_malformed_import_line_is_one_line_and_imports_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "add", "John lives in Hualien")
    good = run(capsys, "export")[1]
    dump = tmp_path / "bad.jsonl"
    dump.write_text(good.replace("Hualien", "Taitung") + '{"content": "x"\n', encoding="utf-8")
    assert_one_line_error(*run(capsys, "import", str(dump)), "line 2 is not a memory")
    assert [r["content"] for r in listed(capsys)] == ["John lives in Hualien"]


def test_importing_a_missing_file_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert_one_line_error(*run(capsys, "import", str(tmp_path / "nope.jsonl")), "cannot read")


def test_a_bad_expiry_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run(capsys, "add", "x", "--expires", "soon"), "use YYYY-MM-DD")
    assert listed(capsys) == []


@pytest.mark.parametrize("limit", ["0", "-5", "100000000000000000000"])
def test_a_search_limit_out_of_range_is_one_line(
    capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["memory", "search", "x", "--limit", limit])
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and out == ""
    assert "--limit" in err and "between 1 and 100" in err and "Traceback" not in err


def test_an_expiry_already_past_is_refused_rather_than_stored_unseen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert_one_line_error(*run(capsys, "add", "x", "--expires", "2020-01-01"), "already past")
    assert run(capsys, "export")[1] == ""


def test_search_takes_a_time_span_and_refuses_an_unreadable_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys, "add", "We planned the Kyoto trip")

    code, out, _ = run(capsys, "search", "Kyoto trip", "--when", "2020")
    assert code == 0 and "Nothing found" in out  # noted today, not in 2020
    code, out, _ = run(capsys, "search", "Kyoto trip", "--after", "в прошлом году")
    assert code == 0 and "Kyoto" in out

    assert_one_line_error(
        *run(capsys, "search", "Kyoto", "--before", "someday"), "could not read the time"
    )


def test_the_model_sees_the_expiry_date_the_user_typed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, "add", "Mom visits this week", "--expires", "2099-12-02")
    monkeypatch.setenv("LORE_MODEL", "scripted")
    assert main(["chat", "-m", "/memory"]) == 0
    block = capsys.readouterr().out
    assert "until 2099-12-02)" in block and "2099-12-03" not in block


def test_forget_and_export_take_json(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "add", "John lives in Hualien")
    run(capsys, "add", "我每天早上喝美式咖啡")
    code, out, _ = run(capsys, "export", "--json")
    assert code == 0 and [r["content"] for r in json.loads(out)] == [
        "John lives in Hualien",
        "我每天早上喝美式咖啡",
    ]
    code, out, _ = run(capsys, "forget", "1", "--json")
    assert code == 0 and json.loads(out) == {"forgotten": 1, "erased_versions": [1]}


def test_an_import_is_searchable_by_meaning_when_it_returns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "add", "John drinks an americano every morning")
    run(capsys, "add", "Джон живёт в Хуаляне")
    dump = tmp_path / "memories.jsonl"
    assert run(capsys, "export", "-o", str(dump))[0] == 0
    home = tmp_path / "other-home"
    assert run(capsys, "import", str(dump), "--home", str(home))[0] == 0

    from lore.config import load_config
    from lore.runtime import build
    from lore.search import searcher

    lore = build(load_config(flags={"home": str(home), "model": "scripted"}))
    stats = searcher(lore).index.stats()
    assert (stats.entries["memory"], stats.pending_vectors) == (2, 0)
    lore.db.close()


def test_an_import_without_vectors_is_searchable_by_its_words(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run(capsys, "add", "John drinks an americano every morning")
    dump = tmp_path / "memories.jsonl"
    run(capsys, "export", "-o", str(dump))
    home = tmp_path / "other-home"
    assert run(capsys, "import", str(dump), "--no-vectors", "--home", str(home))[0] == 0
    code, out, _ = run(capsys, "search", "americano", "--home", str(home))
    assert code == 0 and "americano" in out
