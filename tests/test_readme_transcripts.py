"""The README's command-line transcripts, replayed: every block whose commands need no
model (`lore memory …`) runs in one fresh home, in README order, and must print exactly
what the README shows (dates and times aside)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from lore.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
REPLAYED = ("lore memory ",)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2})?")


def _transcripts() -> list[tuple[str, str]]:
    """(command, expected output) pairs from the replayable ```text blocks."""
    pairs: list[tuple[str, str]] = []
    for block in re.findall(r"```text\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        steps = re.split(r"^\$ ", block, flags=re.M)[1:]
        commands = [step.split("\n", 1)[0] for step in steps]
        if not steps or not all(c.startswith(REPLAYED) for c in commands):
            continue
        for step in steps:
            command, _, output = step.partition("\n")
            pairs.append((command, output))
    return pairs


def test_the_readme_has_replayable_transcripts() -> None:
    assert len(_transcripts()) >= 5


def test_the_readme_transcripts_print_what_they_show(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORE_USER", "john")
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    for command, expected in _transcripts():
        main(shlex.split(command)[1:])
        out, err = capsys.readouterr()
        printed = _DATE.sub("<date>", out + err)
        assert printed == _DATE.sub("<date>", expected), command
