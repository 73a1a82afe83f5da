"""`lore doctor --json`: one JSON object a monitor can read (healthy, the disk, and each
part's state with the lines doctor would print), with the same exit code as the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main
from lore.config import Config


def _doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main(["doctor", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_a_healthy_home_is_one_healthy_object(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _doctor(capsys)
    assert code == 0
    assert report == {
        "healthy": True,
        "disk_full": False,
        "repaired": False,
        "parts": {
            "database": {"ok": True, "lines": ["lore.db: not created yet"]},
            "transcripts": {"ok": True, "lines": ["transcripts: ok"]},
        },
    }


def test_a_damaged_database_is_reported_unhealthy_and_repair_is_recorded(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    config.home.mkdir(parents=True, exist_ok=True)
    Path(config.db_path).write_bytes("not a database at all, 这不是数据库, не база".encode())
    code, report = _doctor(capsys)
    assert code == 1 and report["healthy"] is False
    parts = report["parts"]
    assert isinstance(parts, dict)
    assert parts["database"]["ok"] is False
    assert "is not a SQLite database" in parts["database"]["lines"][0]

    code, report = _doctor(capsys, "--repair")
    assert code == 0 and report["healthy"] is True and report["repaired"] is True
    assert "moved aside" in report["parts"]["database"]["lines"][0]  # type: ignore[index]


def test_the_text_report_says_the_same_lines(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = _doctor(capsys)
    assert main(["doctor"]) == 0
    parts = report["parts"]
    assert isinstance(parts, dict)
    said = [line for part in parts.values() for line in part["lines"]]
    assert capsys.readouterr().out.splitlines() == said
