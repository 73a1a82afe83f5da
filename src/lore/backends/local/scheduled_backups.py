"""The backups `lore serve` writes on its own (`[backup] every`, `keep`, `dir`): each one
the verified archive `lore backup` writes, named by the moment it was taken
(`lore-20261130-191500.tar.gz`, UTC), the newest `keep` kept.

Forgetting reaches them: `forget --everywhere` lists a scheduled backup that holds the
text, and erasing writes a fresh backup of the home as it is after the erasure, then
deletes the ones that held it (`replace_holding`), so a backup is always left.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lore.backends.local.backup import BackupReport, backup, read_verified
from lore.clock import Clock
from lore.config import BACKUP_PERIODS, Config
from lore.errors import LoreError

__all__ = [
    "ScheduledBackups",
    "archives",
    "backup_forever",
    "holding",
    "next_due",
    "replace_holding",
    "take",
]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^lore-(\d{8}-\d{6})(?:-(\d+))?\.tar\.gz$")
_STAMP = "%Y%m%d-%H%M%S"


def archives(config: Config) -> list[Path]:
    """The scheduled backups there are, oldest first."""
    folder = config.backup.directory(config.home)
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if _NAME.match(p.name) and p.is_file()]
    return sorted(found, key=_order)


def _order(path: Path) -> tuple[str, int]:
    found = _NAME.match(path.name)
    assert found is not None
    return found.group(1), int(found.group(2) or 0)


def taken_at(path: Path) -> datetime:
    found = _NAME.match(path.name)
    assert found is not None
    return datetime.strptime(found.group(1), _STAMP).replace(tzinfo=UTC)


def next_due(config: Config, now: datetime) -> datetime | None:
    """When the next scheduled backup is due (now or earlier: at once); None: never."""
    period = BACKUP_PERIODS[config.backup.every]
    if not period:
        return None
    found = archives(config)
    if not found:
        return now
    return taken_at(found[-1]) + timedelta(seconds=period)


def take(config: Config, now: datetime) -> BackupReport:
    """Write one backup now and delete the oldest beyond `keep`."""
    folder = config.backup.directory(config.home)
    stamp = now.astimezone(UTC).strftime(_STAMP)
    target, n = folder / f"lore-{stamp}.tar.gz", 0
    while target.exists():  # a second one within the same second
        n += 1
        target = folder / f"lore-{stamp}-{n}.tar.gz"
    report = backup(config.home, target)
    for old in archives(config)[: -config.backup.keep]:
        old.unlink(missing_ok=True)
    return report


async def backup_forever(config: Config, clock: Clock, *, retry_seconds: float = 900.0) -> None:
    """`lore serve`'s share: a backup whenever one is due, forever. A failure (a full
    disk, say) is one log line and is tried again after `retry_seconds`."""
    if not BACKUP_PERIODS[config.backup.every]:
        return
    if config.database_url:
        log.warning(
            "scheduled backups cover a home on SQLite; back PostgreSQL up with pg_dump "
            "(backup.every is ignored)"
        )
        return
    while True:
        now = clock.now()
        due = next_due(config, now)
        if due is None:
            return
        if due <= now:
            try:
                report = await asyncio.to_thread(take, config, now)
            except (LoreError, OSError) as exc:
                log.warning("scheduled backup failed (%s); trying again later", exc)
                await asyncio.sleep(retry_seconds)
                continue
            log.info(
                "scheduled backup %s (%d files, %d bytes)",
                report.path.name,
                report.files,
                report.size,
            )
            continue
        await asyncio.sleep(min((due - now).total_seconds(), 3600.0))


def holding(config: Config, count: Callable[[bytes], int]) -> list[tuple[Path, int]]:
    """The scheduled backups whose files hold the text (`count` counts it in raw bytes),
    with how many times; one that cannot be read is listed with 0."""
    found: list[tuple[Path, int]] = []
    for path in archives(config):
        try:
            members = read_verified(path)
        except LoreError as exc:
            log.warning("forget: could not read the backup %s (%s)", path.name, exc)
            found.append((path, 0))
            continue
        times = sum(count(data) for data in members.values())
        if times:
            found.append((path, times))
    return found


def replace_holding(config: Config, held: list[Path], now: datetime) -> BackupReport | None:
    """After an erasure: a fresh backup of the home as it is now, then the backups that
    held the text deleted (None when there were none)."""
    if not held:
        return None
    fresh = take(config, now)
    for path in held:
        if path != fresh.path:
            path.unlink(missing_ok=True)
    return fresh


class ScheduledBackups:
    """The `Backups` port on the home's backup folder."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def holding(self, count: Callable[[bytes], int]) -> list[tuple[str, int]]:
        return [(self._shown(path), times) for path, times in holding(self.config, count)]

    def replace_holding(self, names: Sequence[str], now: datetime) -> str | None:
        home = self.config.home
        paths = [Path(name) if Path(name).is_absolute() else home / name for name in names]
        fresh = replace_holding(self.config, paths, now)
        return None if fresh is None else self._shown(fresh.path)

    def _shown(self, path: Path) -> str:
        home = self.config.home
        return path.relative_to(home).as_posix() if path.is_relative_to(home) else str(path)
