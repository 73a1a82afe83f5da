"""The owner's side of each person's data: `lore memory forget --author NAME` shows what
that person noted, in every conversation or only in --scope's, and forgets it only with
--yes; `lore memory export --author NAME` writes that person's data (what they noted and
what names them) as JSON Lines. Other people's memories, and with --scope other
conversations, are never touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main

FAMILY = "line:group:Cfamily"
CLIMBING = "line:group:Cclimbing"


def _load(tmp_path: Path, scope: str, notes: list[tuple[str, str]]) -> None:
    dump = tmp_path / f"{len(notes)}-{abs(hash(scope))}.jsonl"
    records = [
        {"content": text, "author": author, "created_at": "2026-11-30T09:00:00+00:00"}
        for text, author in notes
    ]
    dump.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    assert main(["memory", "import", str(dump), "--scope", scope, "--no-vectors"]) == 0


def _contents(capsys: pytest.CaptureFixture[str], scope: str) -> list[str]:
    capsys.readouterr()
    assert main(["memory", "list", "--scope", scope, "--json"]) == 0
    return sorted(r["content"] for r in json.loads(capsys.readouterr().out))


@pytest.fixture
def family(tmp_path: Path) -> None:
    _load(
        tmp_path,
        FAMILY,
        [
            ("Anna loves jazz", "Anna"),
            ("安娜每天喝绿茶", "Anna"),
            ("Анна ходит в бассейн по средам", "Anna"),
            ("Bob is Anna's brother", "Bob"),
            ("Bob works nights", "Bob"),
        ],
    )
    _load(tmp_path, CLIMBING, [("Anna climbs on Sundays", "Anna")])


@pytest.mark.usefixtures("family")
def test_forget_author_shows_first_and_forgets_only_with_yes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert main(["memory", "forget", "--author", "anna", "--scope", FAMILY]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"3 memories noted by anna in {FAMILY}:")
    assert "Anna loves jazz" in shown and "安娜每天喝绿茶" in shown and "бассейн" in shown
    assert "Bob" not in shown and shown.rstrip().endswith("Run again with --yes to forget them.")
    assert len(_contents(capsys, FAMILY)) == 5  # the dry run changed nothing

    assert main(["memory", "forget", "--author", "Anna", "--scope", FAMILY, "--yes"]) == 0
    assert f"Forgot 3 memories noted by Anna in {FAMILY}." in capsys.readouterr().out
    assert _contents(capsys, FAMILY) == ["Bob is Anna's brother", "Bob works nights"]
    assert _contents(capsys, CLIMBING) == ["Anna climbs on Sundays"]


@pytest.mark.usefixtures("family")
def test_forget_author_json_names_the_ids(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["memory", "forget", "--author", "Bob", "--scope", FAMILY, "--json"]) == 0
    would = json.loads(capsys.readouterr().out)["would_forget"]
    assert main(["memory", "forget", "--author", "Bob", "--scope", FAMILY, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["forgotten"] == would and len(would) == 2


@pytest.mark.usefixtures("family")
def test_forget_author_refuses_to_mix_with_an_id(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["memory", "forget", "3", "--author", "Anna", "--scope", FAMILY]) == 1
    assert "--author" in capsys.readouterr().err
    assert len(_contents(capsys, FAMILY)) == 5


@pytest.mark.usefixtures("family")
def test_export_author_gives_one_persons_data_as_json_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert main(["memory", "export", "--author", "Anna", "--scope", FAMILY]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["content"] for r in records) == sorted(
        [
            "Anna loves jazz",
            "安娜每天喝绿茶",
            "Анна ходит в бассейн по средам",
            "Bob is Anna's brother",
        ]
    )
    assert {r["author"] for r in records} == {"Anna", "Bob"}  # Bob's names her


@pytest.mark.usefixtures("family")
def test_a_name_nobody_noted_is_said_plainly(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["memory", "forget", "--author", "Zoe", "--scope", FAMILY, "--yes"]) == 0
    assert capsys.readouterr().out == f"No memories noted by Zoe in {FAMILY}.\n"


def test_an_empty_author_is_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in (["memory", "forget", "--author", " "], ["memory", "export", "--author", ""]):
        assert main(command) == 1
        assert capsys.readouterr().err == (
            "lore: --author needs a name (as `lore memory list` shows it)\n"
        )


@pytest.mark.usefixtures("family")
def test_forget_author_without_a_scope_covers_every_conversation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert main(["memory", "forget", "--author", "Anna"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("4 memories noted by Anna in 2 conversations:")
    assert f"  {FAMILY}:" in shown and f"  {CLIMBING}:" in shown
    assert "Anna climbs on Sundays" in shown and "安娜每天喝绿茶" in shown and "Bob" not in shown
    assert len(_contents(capsys, FAMILY)) == 5 and len(_contents(capsys, CLIMBING)) == 1

    assert main(["memory", "forget", "--author", "Anna", "--json"]) == 0
    would = json.loads(capsys.readouterr().out)
    assert (
        sorted(would["by_scope"]) == sorted([FAMILY, CLIMBING]) and len(would["would_forget"]) == 4
    )

    assert main(["memory", "forget", "--author", "Anna", "--yes"]) == 0
    assert "Forgot 4 memories noted by Anna in 2 conversations." in capsys.readouterr().out
    assert _contents(capsys, FAMILY) == ["Bob is Anna's brother", "Bob works nights"]
    assert _contents(capsys, CLIMBING) == []
    assert main(["memory", "forget", "--author", "Anna"]) == 0
    assert capsys.readouterr().out == "No memories noted by Anna in any conversation.\n"


@pytest.mark.usefixtures("family")
def test_export_author_without_a_scope_names_each_lines_conversation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert main(["memory", "export", "--author", "Анна"]) == 0  # the name as written in Russian
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_scope = {(r["scope"], r["content"]) for r in records}
    assert (FAMILY, "Анна ходит в бассейн по средам") in by_scope
    assert all(r["scope"] in (FAMILY, CLIMBING) for r in records)
    capsys.readouterr()
    assert main(["memory", "export", "--author", "Anna"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["scope"] for r in records} == {FAMILY, CLIMBING}
    assert len(records) == 5  # her four, and Bob's that names her
