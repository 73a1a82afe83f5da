"""The backups `lore serve` writes on its own (`[backup] every`, `keep`, `dir`): each a
verified archive named by its moment, the newest `keep` kept, one written whenever one is
due; and forget-everywhere reaches them: a backup holding the text is replaced by a fresh
backup of the home as it is after the erasure, so no copy is left and a backup still is."""

from __future__ import annotations

import asyncio
import logging
import re
import tarfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.scheduled_backups import archives, backup_forever, next_due, take
from lore.cli import main
from lore.clock import FixedClock, SystemClock
from lore.config import BackupConfig, Config, load_config
from lore.errors import ConfigError
from lore.runtime import build

NOW = datetime(2026, 11, 30, 11, 15, tzinfo=UTC)


def _every(config: Config, every: str = "daily", keep: int = 7) -> Config:
    return replace(config, backup=BackupConfig(every=every, keep=keep))


def _home_with(config: Config, text: str) -> None:
    lore = build(config)
    lore.memory.remember("cli:default", text, author="john", via="cli", now=NOW)
    lore.db.close()


def _decompressed(path: Path) -> bytes:
    with tarfile.open(path, "r:gz") as tar:
        return b"".join(
            tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        )


def test_each_backup_is_named_by_its_moment_and_only_the_newest_are_kept(config: Config) -> None:
    config = _every(config, keep=2)
    _home_with(config, "John waters the plants on Sundays")
    for hours in (0, 24, 48):
        take(config, NOW + timedelta(hours=hours))
    names = [p.name for p in archives(config)]
    assert names == ["lore-20261201-111500.tar.gz", "lore-20261202-111500.tar.gz"]
    assert archives(config)[0].parent == config.home / "backups"


def test_a_backup_is_due_at_once_then_a_period_after_the_last(config: Config) -> None:
    assert next_due(config, NOW) is None  # every = "": never
    daily = _every(config)
    assert next_due(daily, NOW) == NOW
    _home_with(daily, "x" * 10)
    take(daily, NOW)
    assert next_due(daily, NOW + timedelta(hours=1)) == NOW + timedelta(days=1)
    assert next_due(_every(daily, "hourly"), NOW) == NOW + timedelta(hours=1)


def test_two_backups_in_one_second_both_kept(config: Config) -> None:
    config = _every(config)
    _home_with(config, "Анна любит джаз")
    take(config, NOW)
    take(config, NOW)
    assert [p.name for p in archives(config)] == [
        "lore-20261130-111500.tar.gz",
        "lore-20261130-111500-1.tar.gz",
    ]


@pytest.mark.parametrize(
    "flags,words",
    [({"backup.every": "sometimes"}, "backup.every"), ({"backup.keep": 0}, "backup.keep")],
)
def test_a_bad_schedule_is_refused_in_one_line(
    home: Path, flags: dict[str, object], words: str
) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        load_config(env={"LORE_HOME": str(home), "USER": "john"}, flags=flags)
    assert "\n" not in str(caught.value)


async def test_serve_writes_a_backup_when_one_is_due(config: Config) -> None:
    config = _every(config, "hourly")
    _home_with(config, "我每周日给植物浇水")
    task = asyncio.create_task(backup_forever(config, SystemClock()))
    for _ in range(500):
        if archives(config):
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [written] = archives(config)
    assert "我每周日给植物浇水".encode() in _decompressed(written)


async def test_a_home_on_postgresql_gets_one_line_and_no_backups(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    config = replace(_every(config), database_url="postgresql://lore@db.internal/lore")
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(backup_forever(config, FixedClock(NOW)), 5)
    assert "pg_dump" in caplog.text and archives(config) == []


@pytest.mark.parametrize(
    "fact", ["John's PIN hint is the blue heron", "Анна любит джаз 爵士乐", "约翰的车钥匙在抽屉里"]
)
def test_forget_everywhere_replaces_each_backup_that_holds_the_text(
    config: Config, capsys: pytest.CaptureFixture[str], fact: str
) -> None:
    config = _every(config)
    _home_with(config, "John waters the plants on Sundays")
    take(config, NOW - timedelta(days=2))  # before the fact: kept as it is
    _home_with(config, fact)
    take(config, NOW - timedelta(days=1))
    take(config, NOW)
    older, *holding = archives(config)
    assert all(fact.encode() in _decompressed(p) for p in holding)
    before = older.read_bytes()

    capsys.readouterr()
    assert main(["forget", "--everywhere", "--phrase", fact]) == 0
    shown = capsys.readouterr().out
    for path in holding:
        assert re.search(rf"backups/{re.escape(path.name)}: \d+ cop(y|ies) in a scheduled", shown)
    assert [p.name for p in archives(config)] == [older.name, *(p.name for p in holding)]

    assert main(["forget", "--everywhere", "--phrase", fact, "--yes"]) == 0
    assert "no copy is left" in capsys.readouterr().out.lower()
    left = archives(config)
    assert older in left and older.read_bytes() == before
    assert not any(p in left for p in holding)
    assert len(left) == 2  # the one from before, and a fresh one of the home as it is now
    for path in left:
        data = _decompressed(path)
        assert fact.encode() not in data and b"waters the plants" in data
