"""A conversation's recent history is read at its own offsets: a group with three entries
costs the same whether history.jsonl holds ten lines or ten thousand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.backends.local import history as history_module
from lore.backends.local.history import History

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _fill(history: History, busy: int) -> None:
    history.append("line:group:家族", "妈妈周五到花莲", now=NOW)
    for i in range(busy):
        history.append("cli:default", f"owner note {i}", now=NOW)
    history.append("line:group:家族", "Папа приедет в субботу", now=NOW)


def test_recent_reads_only_the_conversations_own_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = History(tmp_path)
    _fill(history, 300)

    def no_scan(path: Path) -> object:
        raise AssertionError("scanned the whole history file")

    monkeypatch.setattr(history_module, "_reverse_lines", no_scan)
    group = history.recent("line:group:家族")
    assert [e.content for e in group] == ["妈妈周五到花莲", "Папа приедет в субботу"]
    assert [e.content for e in history.recent("cli:default", limit=2)] == [
        "owner note 298",
        "owner note 299",
    ]
    assert [e.cursor for e in history.recent("line:group:家族", after=1)] == [302]


def test_a_history_file_changed_behind_its_back_is_still_read_right(tmp_path: Path) -> None:
    history = History(tmp_path)
    _fill(history, 5)
    lines = history.path.read_bytes().splitlines(keepends=True)
    (tmp_path / "rewritten").write_bytes(b"".join(lines[1:]))  # e.g. a redaction
    (tmp_path / "rewritten").replace(history.path)
    assert [e.content for e in history.recent("line:group:家族")] == ["Папа приедет в субботу"]
    history.append("line:group:家族", "third", now=NOW)  # offsets rebuilt
    assert [e.content for e in history.recent("line:group:家族")][-1] == "third"
