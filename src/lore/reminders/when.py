"""Read a reminder's `when`: ISO-8601, or a relative/natural phrase in English, Chinese or
Russian ("in 10 minutes", "明天早上9点", "завтра в 9"), against an explicit now and zone.

Our own small grammars come first and must account for every word of the phrase;
dateparser is the last resort, and its answer is refused when it ignored a number the
phrase contains (it silently drops "9点" in "明天早上9点").
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from lore.errors import InvalidInputError, quoted
from lore.reminders.phrases import Parts, absolute, normalize, relative
from lore.schedule import localize

__all__ = ["MAX_PHRASE", "format_local", "parse_when", "zone_name"]

_EXAMPLES = (
    'try "in 10 minutes", "tomorrow 9am", "明天早上9点", "завтра в 9" '
    "or ISO like 2026-12-01T09:00+08:00"
)
_MAX_AHEAD = timedelta(days=3660)
MAX_PHRASE = 200  # characters; a time said longer is no time (and costs dateparser seconds)
_DEFAULT_HOUR = 9  # a day without a time ("tomorrow", "下周一") means 09:00
# The hour a period names when said without one ("tomorrow morning", "下午", "вечером").
_PERIOD_HOUR = {"am": 9, "noon": 12, "pm": 15, "evening": 19, "tonight": 20, "night": 21,
                "midnight": 24}  # fmt: skip


def zone_name(zone: tzinfo) -> str:
    """The IANA name of a zone ("Asia/Taipei"; "UTC" for datetime.UTC)."""
    return str(getattr(zone, "key", None) or zone.tzname(None) or "UTC")


def format_local(moment: datetime, zone: tzinfo) -> str:
    """How a fire time is confirmed to the user: Mon 2026-12-01 09:00 (Asia/Taipei)."""
    return f"{moment.astimezone(zone):%a %Y-%m-%d %H:%M} ({zone_name(zone)})"


def parse_when(text: str, now: datetime, zone: tzinfo) -> datetime:
    """The future moment `text` names, aware in `zone`. Raises InvalidInputError with a
    one-line reason for an unreadable phrase or a time that is not in the future."""
    if now.tzinfo is None:
        raise ValueError("parse_when needs an aware now")
    if len(text) > MAX_PHRASE:
        raise InvalidInputError(
            f"a time is at most {MAX_PHRASE} characters, not {quoted(text.strip())}"
        )
    phrase = normalize(text)
    if not phrase:
        raise InvalidInputError(f"no time given; {_EXAMPLES}")
    local_now = now.astimezone(zone)
    try:
        result = (
            _parse_iso(phrase, zone)
            or _parse_relative(phrase, local_now, zone)
            or _parse_absolute(phrase, local_now, zone)
            or _parse_with_dateparser(phrase, local_now, zone)
        )
    except OverflowError:
        raise InvalidInputError(f"{quoted(text.strip())} is more than 10 years ahead") from None
    if result is None:
        raise InvalidInputError(
            f"could not understand the time {quoted(text.strip())}; {_EXAMPLES}"
        )
    if result <= now:
        raise InvalidInputError(
            f"{format_local(result, zone)} is not in the future (it is now "
            f"{format_local(now, zone)}); give a later time"
        )
    if result - now > _MAX_AHEAD:
        raise InvalidInputError(f"{quoted(text.strip())} is more than 10 years ahead")
    return result.astimezone(zone)


def _parse_iso(phrase: str, zone: tzinfo) -> datetime | None:
    if not re.fullmatch(
        r"\d{4}-\d{2}-\d{2}([t ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(z|[+-]\d{2}(:?\d{2})?)?", phrase
    ):
        return None
    try:
        moment = datetime.fromisoformat(phrase.upper())
    except ValueError as exc:
        raise InvalidInputError(f"{quoted(phrase)} is not a valid date and time ({exc})") from exc
    if moment.tzinfo is not None:
        return moment
    if len(phrase) == 10:  # a bare date: the default hour
        moment = moment.replace(hour=_DEFAULT_HOUR)
    return localize(moment, zone)


# -- phrases: relative offsets and day/time parts -------------------------------


def _parse_relative(phrase: str, now: datetime, zone: tzinfo) -> datetime | None:
    offset = relative(phrase)
    if offset is None:
        return None
    days, elapsed = offset
    if days + elapsed <= timedelta(0):
        raise InvalidInputError(f"{quoted(phrase)} is not in the future; give a later time")
    # Days move the wall clock, so "in 1 day" keeps its time across a DST change.
    moment = localize(now.replace(tzinfo=None) + days, zone) if days else now
    return (moment.astimezone(UTC) + elapsed).astimezone(zone)


def _parse_absolute(phrase: str, now: datetime, zone: tzinfo) -> datetime | None:
    parts = absolute(phrase)
    return None if parts is None else _resolve(parts, now, zone)


def _resolve(parts: Parts, now: datetime, zone: tzinfo) -> datetime:
    """Turn the parts into a local moment; a time alone means its next occurrence."""
    # "Friday, December 25": the date decides, and the weekday must agree with it.
    weekday = parts.weekday if parts.month_day is None else None
    if sum(x is not None for x in (parts.days, weekday, parts.month_day)) > 1:
        raise InvalidInputError("the phrase names two different days; give one")
    today = now.date()
    hours = _hours(parts)
    if parts.weekday is not None or parts.month_day is not None or (parts.days or 0) > 0:
        hours = hours[:1]  # "tomorrow at 9", "в понедельник в 10": the hour as said
    if parts.days is not None:
        days = [today + timedelta(days=parts.days)]
    elif parts.month_day is not None:
        days = _month_days(today.year, *parts.month_day)
        if parts.weekday is not None:
            days = [day for day in days if day.weekday() == parts.weekday]
            if not days:
                raise InvalidInputError("the date and the weekday do not agree; give one")
    elif parts.weekday is not None:
        if parts.week_rule.startswith("week+"):
            monday = today - timedelta(days=today.weekday())
            weeks = int(parts.week_rule[5:])
            days = [monday + timedelta(days=7 * weeks + parts.weekday)]
        else:
            ahead = (parts.weekday - today.weekday()) % 7
            if parts.week_rule == "next" and ahead == 0:
                ahead = 7
            days = [today + timedelta(days=ahead), today + timedelta(days=ahead + 7)]
    else:
        days = [today, today + timedelta(days=1)]
    candidates = [_at(day, hour, parts.minute, zone) for day in days for hour in hours]
    future = [c for c in candidates if c > now]
    # With no future reading ("today 8am" at 9), report the one that was meant as past.
    return min(future) if future else candidates[0]


def _hours(parts: Parts) -> list[int]:
    """The 24-hour readings of the spoken hour, earliest preference first."""
    if parts.hour is None:
        return [_PERIOD_HOUR[parts.period] if parts.period else _DEFAULT_HOUR]
    hour, period = parts.hour, parts.period
    if hour > 24 or parts.minute > 59 or (hour > 12 and period in ("am", "noon")):
        raise InvalidInputError(f"{hour}:{parts.minute:02d} is not a valid time of day")
    if parts.literal or hour > 12:
        return [hour]
    if period == "am":
        return [hour % 12]
    if period == "noon":
        return [hour + 12 if hour < 6 else hour]
    if period in ("pm", "evening", "tonight"):
        return [hour % 12 + 12 if not (period != "pm" and hour == 12) else 24]
    if period == "night":
        return [hour if hour < 6 else (24 if hour == 12 else hour + 12)]
    if period == "midnight":
        raise InvalidInputError("give either an hour or midnight, not both")
    return [hour, hour + 12] if hour < 12 else [12, 24]  # "at 9": 09:00 or 21:00, whichever is next


def _month_days(year: int, month: int, day: int) -> list[date]:
    """That day this year and next (Feb 29 only in the leap one)."""
    days = []
    for candidate in (year, year + 1):
        try:
            days.append(date(candidate, month, day))
        except ValueError:
            continue
    if not days:
        raise InvalidInputError(f"day {day} of month {month} is not a date")
    return days


def _at(day: date, hour: int, minute: int, zone: tzinfo) -> datetime:
    return localize(datetime.combine(day, time(0)) + timedelta(hours=hour, minutes=minute), zone)


# -- last resort: dateparser, checked -------------------------------------------------


def _parse_with_dateparser(phrase: str, now: datetime, zone: tzinfo) -> datetime | None:
    if not re.search(r"[^\d\s]", phrase):
        return None  # a bare number is not a time
    import dateparser  # slow to import: only when our grammars gave up

    settings = {
        "RELATIVE_BASE": now.replace(tzinfo=None),
        "PREFER_DATES_FROM": "future",
        "TIMEZONE": zone_name(zone),
        "RETURN_AS_TIMEZONE_AWARE": True,
    }
    parsed = dateparser.parse(phrase, languages=["en", "ru", "zh"], settings=settings)
    if not isinstance(parsed, datetime):
        return None
    result = parsed.astimezone(UTC)
    local = result.astimezone(zone)
    explained = {
        local.hour,
        local.hour % 12 or 12,
        local.minute,
        local.day,
        local.month,
        local.year,
        local.year % 100,
    }
    delta = abs(result - now)
    explained |= {round(delta / timedelta(seconds=s)) for s in (60, 3600, 86400, 604800, 2592000)}
    for number in re.findall(r"\d+", phrase):
        if int(number) not in explained:
            raise InvalidInputError(
                f"could not read every part of {quoted(phrase)} (the {number} was ignored); "
                f"{_EXAMPLES}"
            )
    return result
