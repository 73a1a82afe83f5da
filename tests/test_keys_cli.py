"""`--session` on the command line takes a key in any script a person types (joiners,
direction marks, ideographic spaces included) and refuses a control character in one line
that names it, before anything is opened or stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main

TYPED = {
    "emoji ZWJ sequence": "cli:👨‍👩‍👧",
    "ZWNJ in Persian": "cli:می\u200cخواهم",
    "RLM and LRM marks": "cli:\u200fשלום\u200e notes",
    "ideographic space": "cli:会議\u3000メモ",
}
HOSTILE = {
    "newline": ("cli:a\nb", "U+000A"),
    "NUL": ("cli:a\x00b", "U+0000"),
    "RTL override": ("cli:\u202egnp.exe", "U+202E"),
    "line separator": ("cli:a\u2028b", "U+2028"),
    "10 KB": ("cli:" + "k" * 10_000, "(10004 characters)"),
}


@pytest.fixture(autouse=True)
def _offline_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_MODEL", "scripted")
    monkeypatch.setenv("LORE_USER", "john")


@pytest.mark.parametrize("key", TYPED.values(), ids=TYPED.keys())
def test_a_session_key_in_any_script_is_its_own_conversation(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    assert main(["memory", "add", "I like jasmine tea", "--session", key]) == 0
    capsys.readouterr()
    assert main(["memory", "list", "--session", key, "--json"]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert [m["content"] for m in mine] == ["I like jasmine tea"]
    assert main(["memory", "list", "--session", "cli:default", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize("command", [["chat", "-m", "hi"], ["memory", "add", "I like tea"]])
@pytest.mark.parametrize("case", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_session_key_with_a_control_character_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], home: Path, case: tuple[str, str], command: list[str]
) -> None:
    key, named = case
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--session", key])
    assert exit_.value.code != 0
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and named in err, err
    assert len(err) < 300
    assert not (home / "lore.db").exists() and not (home / "sessions").exists()
