"""Every `lore` command given empty or odd arguments answers in one line and exits non-zero,
never with a traceback, and changes nothing."""

from __future__ import annotations

import argparse

import pytest

from lore.cli import build_parser, main


def _leaf_commands() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """Every runnable command path ("memory add", "chat", ...) with its parser."""
    found: list[tuple[list[str], argparse.ArgumentParser]] = []

    def walk(path: list[str], parser: argparse.ArgumentParser) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found.append((path, parser))
            return
        for name, child in subs[0].choices.items():
            walk([*path, name], child)

    walk([], build_parser())
    return found


def _takes(parser: argparse.ArgumentParser, option: str) -> bool:
    return any(option in action.option_strings for action in parser._actions)


def _positionals(parser: argparse.ArgumentParser) -> int:
    return sum(1 for a in parser._actions if not a.option_strings and a.nargs is None)


def _odd_invocations() -> list[list[str]]:
    cases: list[list[str]] = []
    for path, parser in _leaf_commands():
        filler = ["x"] * _positionals(parser)
        if _takes(parser, "--home") and path != ["config", "show"]:  # reads, never writes
            cases.append([*path, *filler, "--home", "/dev/null/lore"])
        if _takes(parser, "--model"):
            cases.append([*path, *filler, "--model", "nonsense"])
        if _takes(parser, "--session"):
            cases.append([*path, *filler, "--session", ""])
            cases.append([*path, *filler, "--session", "a\nb"])
        if _positionals(parser):
            cases.append([*path, *[""] * _positionals(parser)])
            cases.append([*path, *["   "] * _positionals(parser)])
        for option in ("--limit", "--offset"):
            if _takes(parser, option):
                cases.append([*path, *filler, option, "abc"])
    cases += [
        ["chat", "-m", ""],
        ["chat", "-m", "   "],
        ["memory", "add", "x", "--kind", ""],
        ["memory", "add", "x", "--expires", "someday"],
        ["memory", "add", "x", "--keyword", "k" * 51],
        ["memory", "import", "/nonexistent/file.jsonl"],
        ["memory", "export", "-o", "/nonexistent/dir/out.jsonl"],
        ["memory", "search", "x", "--limit", "0"],
        ["remind", "add", "x", "--when", ""],
        ["remind", "add", "x", "--every", "whenever"],
        ["remind", "cancel", "-1"],
        ["sessions", "show", "x", "--limit", "-1"],
        ["bench", "retrieval", "/nonexistent.json"],
        ["service", "status"],  # nothing installed
        ["service", "logs", "--lines", "0"],
    ]
    return cases


@pytest.fixture(autouse=True)
def _offline_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_MODEL", "scripted")
    monkeypatch.setenv("LORE_USER", "john")


def test_every_command_is_covered() -> None:
    covered = {tuple(case) for case in _odd_invocations()}
    for path, _ in _leaf_commands():
        assert any(list(case[: len(path)]) == path for case in covered), path


@pytest.mark.parametrize("argv", _odd_invocations(), ids=lambda argv: repr(argv))
def test_odd_arguments_get_one_line_and_a_failing_exit(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    assert code != 0, (out, err)
    assert "Traceback" not in err
    assert err.startswith("lore") and err.count("\n") == 1, err
