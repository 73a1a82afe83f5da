"""`lore.log` is capped: rotated at `[log] max_kb`, with `[log] backups` old files kept."""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.cli import main
from lore.config import LogConfig, load_config
from lore.logs import configure_logging


@pytest.fixture(autouse=True)
def _handlers_restored() -> Iterator[None]:
    yield
    configure_logging(Path("/nonexistent/lore-home"))  # file handler gone, console as before


def test_the_log_is_rotated_by_size_and_only_the_newest_files_are_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    configure_logging(home, rotation=LogConfig(max_kb=10, backups=2))
    log = logging.getLogger("lore.test")
    for n in range(1000):  # about 100 KB of lines
        log.info("line %04d %s", n, "x" * 60)
    files = sorted(p.name for p in home.iterdir())
    assert files == ["lore.log", "lore.log.1", "lore.log.2"]
    assert all((home / name).stat().st_size <= 10_000 for name in files)
    assert "line 0999" in (home / "lore.log").read_text(encoding="utf-8")


def test_the_settings_reach_the_log_a_command_writes(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[log]\nmax_kb = 20\nbackups = 5\n", encoding="utf-8")
    assert main(["remind", "list"]) == 0
    (to_file,) = [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.handlers.RotatingFileHandler)
    ]
    assert (to_file.maxBytes, to_file.backupCount) == (20_000, 5)


def test_a_log_that_would_never_rotate_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[log]\nbackups = 0\n", encoding="utf-8")
    with pytest.raises(Exception, match="'log.backups' is 0; it must be between 1 and 100"):
        load_config(env={"LORE_HOME": str(tmp_path), "USER": "anna"})
