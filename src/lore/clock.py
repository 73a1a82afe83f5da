"""Time: aware datetimes only. Code asks a `Clock` for now; tests pass a `FixedClock`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lore.errors import ConfigError

__all__ = ["Clock", "FixedClock", "SystemClock", "resolve_zone"]


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment.astimezone(UTC)

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now


def resolve_zone(name: str = "") -> tzinfo:
    """The IANA zone `name`, else the system's zone (/etc/localtime), else UTC."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ConfigError(
                f"unknown timezone {name!r}; use an IANA name like Asia/Taipei"
            ) from exc
    localtime = Path("/etc/localtime")
    try:
        target = str(localtime.resolve())
        if "zoneinfo/" in target:
            return ZoneInfo(target.split("zoneinfo/", 1)[1])
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    return UTC
