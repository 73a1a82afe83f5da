"""A PostgreSQL address Lore cannot use is one line, at once: a malformed one is named
(its password masked) before anything connects, and the connection pool's own warnings
stay in lore.log."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from lore.cli import main

MALFORMED = ("notaurl", "mysql://lore:hunter2@db/lore", "postgresql://[db")


@pytest.fixture(autouse=True)
def _scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_MODEL", "scripted")
    monkeypatch.setenv("LORE_USER", "john")


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_database_url_is_refused_before_connecting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    # It was tried for 15 seconds, then reported as "cannot connect".
    monkeypatch.setenv("LORE_DATABASE_URL", url)
    started = time.monotonic()
    assert main(["memory", "add", "Аня живёт в 花莲"]) == 1
    out, err = capsys.readouterr()
    assert time.monotonic() - started < 10
    assert out == "" and err.count("\n") == 1 and "is not a PostgreSQL URL" in err, err
    assert "hunter2" not in err


@pytest.mark.parametrize("url", MALFORMED)
def test_lore_migrate_refuses_a_malformed_url_in_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    assert main(["memory", "add", "Аня живёт в 花莲"]) == 0
    capsys.readouterr()
    assert main(["migrate", "--to", url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "is not a PostgreSQL URL" in err, err


def test_lore_migrate_keeps_library_warnings_in_the_log(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # psycopg's pool warns on each failed attempt to connect: without Lore's logging,
    # Python printed every one of them raw above the one line that says what happened.
    assert main(["migrate", "--to", "notaurl"]) == 1
    logging.getLogger("psycopg.pool").warning("error connecting in 'lore': refused")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error connecting" not in err
    assert "error connecting in 'lore': refused" in (home / "lore.log").read_text()
