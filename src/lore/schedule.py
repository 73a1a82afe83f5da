"""Recurrence schedules and their pure math: `next_after(schedule, anchor, now, zone)`.

Wall-clock schedules (daily, weekly, cron) are matched in the conversation's local time
and mapped to instants with zoneinfo: a time skipped by a spring-forward change fires at
the end of the gap, a time repeated by a fall-back change fires once (its first
occurrence; cron patterns that run every hour also run in the repeated hour). Interval
schedules count elapsed time from their anchor. Nothing depends on when a reminder was
last delivered, so schedules never drift.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from lore.errors import InvalidInputError, quoted

__all__ = [
    "Cron",
    "Daily",
    "Interval",
    "Schedule",
    "Weekly",
    "localize",
    "next_after",
    "parse_schedule",
]

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_HORIZON_YEARS = 30  # long enough for "Feb 29 that is a Sunday"
_FORMATS = (
    '"daily 09:00", "weekly mon,wed 18:30", "weekdays 08:00", "every 15m", "every 2h", '
    'or a cron expression like "0 9 * * 1-5"'
)


@dataclass(frozen=True)
class Daily:
    times: tuple[time, ...]

    @property
    def text(self) -> str:
        return f"daily {_times_text(self.times)}"


@dataclass(frozen=True)
class Weekly:
    days: frozenset[int]  # 0 = Monday, as `date.weekday()`
    times: tuple[time, ...]

    @property
    def text(self) -> str:
        days = ",".join(DAY_NAMES[d] for d in sorted(self.days))
        return f"weekly {days} {_times_text(self.times)}"


@dataclass(frozen=True)
class Interval:
    seconds: int

    @property
    def text(self) -> str:
        if self.seconds % 3600 == 0:
            return f"every {self.seconds // 3600}h"
        return f"every {self.seconds // 60}m"


@dataclass(frozen=True)
class Cron:
    expr: str
    minutes: frozenset[int]
    hours: frozenset[int]
    doms: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Monday
    dom_star: bool
    dow_star: bool

    @property
    def text(self) -> str:
        return f"cron {self.expr}"


Schedule = Daily | Weekly | Interval | Cron


# -- parsing ------------------------------------------------------------------------


def parse_schedule(spec: str | Mapping[str, Any], default: datetime | None = None) -> Schedule:
    """Parse a recurrence ("daily 09:00", "every 15m", "cron 0 9 * * 1-5", plain cron, or
    a mapping like {"kind": "weekly", "days": ["mon"], "times": ["18:30"]}).

    `default` (local time of the first fire) fills a missing time or weekday, so
    "daily" with a first time of 09:00 means "daily 09:00".
    """
    if isinstance(spec, Mapping):
        return _parse_mapping(spec, default)
    text = " ".join(str(spec).strip().lower().split())
    if not text:
        raise InvalidInputError(f"empty recurrence; use {_FORMATS}")
    if text.startswith("cron ") or text.startswith("@") or _looks_like_cron(text):
        return _parse_cron(text.removeprefix("cron ").strip())
    if text in ("hourly", "every hour"):
        return Interval(3600)
    if text == "every minute":
        return Interval(60)
    match = re.fullmatch(r"every (\d+) ?(m|min|mins|minutes?|h|hrs?|hours?)", text)
    if match:
        amount, unit = int(match[1]), match[2]
        return _interval(amount * (3600 if unit.startswith("h") else 60), text)
    if re.fullmatch(r"every \d+ ?(d|days?|w|weeks?)", text):
        raise InvalidInputError(
            f"recurrence {quoted(text)}: for days use 'daily HH:MM', 'weekly mon 09:00' or cron"
        )
    match = re.fullmatch(r"(?:daily|every ?day)(?: (?:at )?(.+))?", text)
    if match:
        return Daily(_parse_times(match[1] or "", default, text))
    match = re.fullmatch(
        r"(weekdays|weekends|weekly|every)(?: (?!at )([a-z,-]+))?(?: (?:at )?(.+))?", text
    )
    if match and not (match[1] == "every" and not match[2]):
        days = match[2] or ""
        if match[1] in ("weekdays", "weekends"):
            if days:
                raise InvalidInputError(f"unknown recurrence {quoted(spec)}; use {_FORMATS}")
            days = match[1]
        return Weekly(_parse_days(days, default, text), _parse_times(match[3] or "", default, text))
    raise InvalidInputError(f"unknown recurrence {quoted(spec)}; use {_FORMATS}")


def _parse_mapping(spec: Mapping[str, Any], default: datetime | None) -> Schedule:
    kind = str(spec.get("kind", "")).lower()
    times = spec.get("times", spec.get("time", ""))
    times_text = ",".join(times) if isinstance(times, list | tuple) else str(times)
    if kind == "daily":
        return Daily(_parse_times(times_text, default, "daily"))
    if kind == "weekly":
        days = spec.get("days", "")
        days_text = ",".join(days) if isinstance(days, list | tuple) else str(days)
        return Weekly(
            _parse_days(days_text.lower(), default, "weekly"),
            _parse_times(times_text, default, "weekly"),
        )
    if kind in ("every", "interval"):
        try:
            seconds = int(spec.get("minutes", 0)) * 60 + int(spec.get("hours", 0)) * 3600
        except (TypeError, ValueError) as exc:
            raise InvalidInputError("'every' needs whole 'minutes' or 'hours'") from exc
        return _interval(seconds, str(dict(spec)))
    if kind == "cron":
        return _parse_cron(str(spec.get("expr", "")).strip())
    raise InvalidInputError(f"unknown recurrence kind {kind!r}; use daily, weekly, every or cron")


def _interval(seconds: int, text: str) -> Interval:
    if seconds < 60:
        raise InvalidInputError(
            f"recurrence {quoted(text)} is too frequent; the minimum is every 1m"
        )
    if seconds > 366 * 86400:
        raise InvalidInputError(f"recurrence {quoted(text)} is longer than a year; use cron")
    return Interval(seconds)


def _parse_times(text: str, default: datetime | None, spec: str) -> tuple[time, ...]:
    text = text.strip().removeprefix("at ").strip()
    if not text:
        if default is None:
            raise InvalidInputError(f"recurrence {quoted(spec)} needs a time, e.g. 'daily 09:00'")
        return (time(default.hour, default.minute),)
    found: set[time] = set()
    for part in text.replace(" and ", ",").split(","):
        match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))? ?(am|pm)?", part.strip())
        if not match:
            raise InvalidInputError(
                f"cannot read the time {quoted(part.strip())} in {quoted(spec)}; use HH:MM"
            )
        hour, minute = int(match[1]), int(match[2] or 0)
        if match[3]:
            if not 1 <= hour <= 12:
                raise InvalidInputError(f"{quoted(part.strip())} is not a valid 12-hour time")
            hour = hour % 12 + (12 if match[3] == "pm" else 0)
        if hour > 23 or minute > 59:
            raise InvalidInputError(f"{quoted(part.strip())} is not a valid time of day")
        found.add(time(hour, minute))
    return tuple(sorted(found))


_DAY_WORDS = {
    **{name: i for i, name in enumerate(DAY_NAMES)},
    **{f"{name}day": i for i, name in enumerate(("mon", "tues", "wednes", "thurs", "fri"))},
    "saturday": 5,
    "sunday": 6,
    "tues": 1,
    "thur": 3,
    "thurs": 3,
}


def _day_index(name: str) -> int | None:
    name = name.strip().lower()
    return _DAY_WORDS.get(name, _DAY_WORDS.get(name.removesuffix("s")))


def _parse_days(text: str, default: datetime | None, spec: str) -> frozenset[int]:
    text = text.strip()
    if text in ("weekdays", "weekday"):
        return frozenset(range(5))
    if text in ("weekends", "weekend"):
        return frozenset((5, 6))
    if not text:
        if default is None:
            raise InvalidInputError(
                f"recurrence {quoted(spec)} needs days, e.g. 'weekly mon,wed 18:30'"
            )
        return frozenset((default.weekday(),))
    days: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        start, end = _day_index(first), _day_index(last or first)
        if start is None or end is None:
            raise InvalidInputError(
                f"unknown day {quoted(part)} in {quoted(spec)}; use mon,tue,...,sun"
            )
        days.update((start + k) % 7 for k in range((end - start) % 7 + 1))
    return frozenset(days)


# -- cron ---------------------------------------------------------------------------

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _looks_like_cron(text: str) -> bool:
    fields = text.split()
    return len(fields) == 5 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields[:2])


def _parse_cron(expr: str) -> Cron:
    expr = " ".join(_MACROS.get(expr, expr).split())
    parts = expr.split(" ")
    if len(parts) != 5:
        raise InvalidInputError(
            f"cron {quoted(expr)} needs 5 fields: minute hour day-of-month month day-of-week"
        )
    minutes = _cron_field(parts[0], 0, 59, (), expr)
    hours = _cron_field(parts[1], 0, 23, (), expr)
    doms = _cron_field(parts[2], 1, 31, (), expr)
    months = _cron_field(parts[3], 1, 12, _MONTH_NAMES, expr, offset=1)
    cron_days = _cron_field(parts[4], 0, 7, ("sun", *DAY_NAMES[:6]), expr)
    weekdays = frozenset((d - 1) % 7 for d in cron_days)  # cron 0/7 = Sunday -> 6
    dom_star, dow_star = parts[2][0] in "*?", parts[4][0] in "*?"
    # With a restricted day-of-week, some date always matches; otherwise a real date must.
    if dow_star and not any(d <= _max_days(m) for m in months for d in doms):
        raise InvalidInputError(f"cron {quoted(expr)} never fires: no month has that day")
    return Cron(expr, minutes, hours, doms, months, weekdays, dom_star, dow_star)


def _cron_field(
    text: str, low: int, high: int, names: tuple[str, ...], expr: str, offset: int = 0
) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        match = re.fullmatch(r"(\*|\?|\w+)(?:-(\w+))?(?:/(\d+))?", item)
        if not match:
            raise InvalidInputError(f"cannot read {quoted(item)} in cron {quoted(expr)}")
        step = int(match[3] or 1)
        if match[1] in "*?":
            start, end = low, high
        else:
            start = _cron_value(match[1], low, high, names, offset, expr)
            end = (
                _cron_value(match[2], low, high, names, offset, expr)
                if match[2]
                else (high if match[3] else start)
            )
        if step < 1 or end < start:
            raise InvalidInputError(f"{quoted(item)} in cron {quoted(expr)} is an empty range")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _cron_value(
    token: str, low: int, high: int, names: tuple[str, ...], offset: int, expr: str
) -> int:
    if token.isdecimal():
        value = int(token)
    elif token[:3] in names and len(token) >= 3:
        value = names.index(token[:3]) + offset
    else:
        raise InvalidInputError(f"cannot read {quoted(token)} in cron {quoted(expr)}")
    if not low <= value <= high:
        raise InvalidInputError(
            f"{quoted(token)} is out of range {low}-{high} in cron {quoted(expr)}"
        )
    return value


def _max_days(month: int) -> int:
    return (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]


# -- the math -----------------------------------------------------------------------


def next_after(
    schedule: Schedule, anchor: datetime, now: datetime, zone: tzinfo
) -> datetime | None:
    """The first occurrence strictly after `now` and not before `anchor`, in UTC.

    `anchor` is the first fire time: interval schedules count from it. None when the
    schedule has no occurrence within the horizon (a cron date that exists too rarely).
    """
    if anchor.tzinfo is None or now.tzinfo is None:
        raise ValueError("next_after needs aware datetimes")
    # Arithmetic on datetimes sharing a tzinfo is wall-clock arithmetic: work in UTC.
    anchor, now = anchor.astimezone(UTC), now.astimezone(UTC)
    if isinstance(schedule, Interval):
        step = timedelta(seconds=schedule.seconds)
        if anchor > now:
            return anchor
        return anchor + ((now - anchor) // step + 1) * step
    after = max(now, anchor - timedelta(microseconds=1))
    return _next_wall(schedule, after, zone)


def _next_wall(schedule: Daily | Weekly | Cron, after: datetime, zone: tzinfo) -> datetime | None:
    if isinstance(schedule, Cron):
        times = [time(h, m) for h in sorted(schedule.hours) for m in sorted(schedule.minutes)]
        every_hour = len(schedule.hours) == 24
    else:
        times, every_hour = list(schedule.times), False
    local = after.astimezone(zone)
    day = local.date()
    # Offsets change by at most a few hours, so wall times well before `after` cannot be
    # later than it: skip them on the first day.
    lookback = (local.replace(tzinfo=None) - timedelta(hours=3)).time()
    first = bisect_left(times, lookback) if lookback < local.time() else 0
    end = day + timedelta(days=366 * _HORIZON_YEARS)
    while day < end:
        if isinstance(schedule, Cron) and day.month not in schedule.months:
            day = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
            first = 0
            continue
        if _day_matches(schedule, day):
            best: datetime | None = None
            best_wall: datetime | None = None
            for at in times[first:]:
                wall = datetime.combine(day, at)
                if best_wall is not None and wall > best_wall + timedelta(hours=3):
                    break
                for instant in _instants(wall, zone, every_hour):
                    if instant > after and (best is None or instant < best):
                        best, best_wall = instant, wall
            if best is not None:
                return best
        day += timedelta(days=1)
        first = 0
    return None


def _day_matches(schedule: Daily | Weekly | Cron, day: date) -> bool:
    if isinstance(schedule, Daily):
        return True
    if isinstance(schedule, Weekly):
        return day.weekday() in schedule.days
    dom_ok = day.day in schedule.doms
    dow_ok = day.weekday() in schedule.weekdays
    # Vixie cron: when both day fields are restricted, either may match.
    if schedule.dom_star or schedule.dow_star:
        return dom_ok and dow_ok
    return dom_ok or dow_ok


def _instants(wall: datetime, zone: tzinfo, both_folds: bool) -> list[datetime]:
    """The UTC instants a wall time names (two in a repeated hour, if asked for)."""
    first = localize(wall, zone)
    if both_folds:
        second = wall.replace(tzinfo=zone, fold=1)
        if second.utcoffset() != first.utcoffset() and _exists(second, zone):
            return [first.astimezone(UTC), second.astimezone(UTC)]
    return [first.astimezone(UTC)]


def _exists(moment: datetime, zone: tzinfo) -> bool:
    return moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == moment.replace(
        tzinfo=None
    )


def localize(wall: datetime, zone: tzinfo) -> datetime:
    """Attach `zone` to a naive wall time. A time in a spring-forward gap becomes the
    first instant after the gap; a repeated time takes its first occurrence."""
    if wall.tzinfo is not None:
        raise ValueError("localize needs a naive wall time")
    moment = wall.replace(tzinfo=zone, fold=0)
    if _exists(moment, zone):
        return moment
    # In a gap: find the transition between the two offsets by bisection (UTC seconds).
    before = moment.utcoffset() or timedelta(0)
    after = wall.replace(tzinfo=zone, fold=1).utcoffset() or timedelta(0)
    naive_utc = wall.replace(tzinfo=UTC)
    low, high = naive_utc - max(before, after), naive_utc - min(before, after)
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0).astimezone(zone)


def _times_text(times: tuple[time, ...]) -> str:
    return ",".join(t.strftime("%H:%M") for t in times)
