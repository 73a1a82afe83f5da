"""Every command has --help, and every command is documented in the README."""

from __future__ import annotations

import argparse

import pytest

from lore.cli import build_parser
from tests.readme_transcripts import docs_text

README = docs_text()  # the README and the documentation's pages


def _commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    found = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.extend(_commands(sub, (*prefix, name)))
    return found


COMMANDS = _commands(build_parser())


def test_there_are_subcommands() -> None:
    assert ("chat",) in COMMANDS and ("config", "show") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "lore")
def test_every_command_has_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([*path, "--help"])
    assert done.value.code == 0
    assert "usage: lore" in capsys.readouterr().out


@pytest.mark.parametrize("path", [p for p in COMMANDS if p], ids=" ".join)
def test_every_command_is_in_the_readme(path: tuple[str, ...]) -> None:
    assert f"lore {' '.join(path)}" in README


def _groups(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Commands that only group others (`lore memory`, `lore index`)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if prefix:
                found.append(prefix)
            for name, sub in action.choices.items():
                found.extend(_groups(sub, (*prefix, name)))
    return found


@pytest.mark.parametrize("path", _groups(build_parser()), ids=" ".join)
def test_a_command_group_without_its_action_shows_usage_and_fails(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.cli import main

    try:
        code = main(list(path))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    assert code != 0, out
    assert "usage: lore" in out + err


# Commands that act or talk rather than print data: a chat, a server, an archive written
# or read back, a copy between databases, shell code.
_NO_DATA = {
    ("chat",),
    ("serve",),
    ("mcp",),
    ("backup",),
    ("restore",),
    ("migrate",),
    ("doctor",),
    ("completion",),
}


@pytest.mark.parametrize("path", [p for p in COMMANDS if p and p not in _NO_DATA], ids=" ".join)
def test_every_command_that_prints_data_takes_json(path: tuple[str, ...]) -> None:
    parser = build_parser()
    for word in path:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[word]
    if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        return  # a group: its actions are checked one by one
    assert any("--json" in a.option_strings for a in parser._actions), path
