"""The span of time a phrase names, looking back as often as forward: "last week",
"2023-05", "May 2023", "3 days ago", "昨天", "上个月", "去年", "вчера", "в прошлом году".

Reminders read the one future moment a phrase names (`lore.reminders.when`); a search
needs a range, and mostly a past one. Every phrase resolves against an explicit `now`
and zone (the time of the query, or of the message that said it), to a half-open span
[start, end) of whole local days, weeks, months or years.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo

from lore.errors import InvalidInputError, quoted
from lore.reminders.phrases import normalize
from lore.search.rerank import TimeSpan

__all__ = ["find_about", "parse_bound", "parse_span", "time_range"]

# Phrases that, inside a sentence, name the time it is about (resolved by parse_span).
_ABOUT = re.compile(
    r"\b(?:yesterday|today|tomorrow|(?:last|this|next) (?:week|month|year)|"
    r"(?:\d+|a|an|one|two|three) (?:day|week)s? ago|last (?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|(?:in )?(?:january|february|march|april|june|july|"
    r"august|september|october|november|december)(?: \d{4})?|\d{4}-\d{2}-\d{2})\b"
    r"|昨天|前天|今天|明天|后天|上周[一二三四五六日天]?|本周|下周|上个月|下个月|这个月|去年|今年|明年"
    r"|\d{4}年\d{1,2}月(?:\d{1,2}[日号])?|[\d一二两三四五六七八九十]+个?(?:天|周|星期)前"
    r"|позавчера|вчера|сегодня|послезавтра|завтра|\d+ (?:дн\w*|день|недел\w*) назад"
    r"|на (?:прошлой|этой|следующей) неделе|в (?:прошлом|этом|следующем) (?:месяце|году)",
    re.IGNORECASE,
)

_EN_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_RU_MONTHS = (
    "январ феврал март апрел ма июн июл август сентябр октябр ноябр декабр"
).split()  # stems: "мая", "марте", "январь"
_EN_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_RU_WEEKDAYS = ("понедельник", "вторник", "сред", "четверг", "пятниц", "суббот", "воскресень")
_CN_NUMBERS = {c: i for i, c in enumerate("零一二三四五六七八九十")} | {"两": 2}
_UNIT_DAYS = {"day": 1, "week": 7, "天": 1, "日": 1, "周": 7, "星期": 7, "день": 1, "дн": 1,
              "недел": 7}  # fmt: skip


def parse_span(text: str, now: datetime, zone: tzinfo) -> TimeSpan | None:
    """The span `text` names, or None when it names none."""
    phrase = normalize(text).strip(" .,!?")
    if not phrase:
        return None
    today = now.astimezone(zone).date()
    found = _iso(phrase) or _named_day(phrase, today) or _period(phrase, today)
    found = found or _ago(phrase, today) or _month_year(phrase, today) or _weekday(phrase, today)
    if found is None:
        return None
    first, last = found
    return TimeSpan(_start(first, zone), _start(last, zone))


def parse_bound(text: str, now: datetime, zone: tzinfo, *, end: bool) -> float:
    """One end of a range: an ISO date or time, or a phrase (its start for `after`, its
    end for `before`). Raises InvalidInputError for what it cannot read."""
    raw = text.strip()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        moment = None
    if moment is not None and ("t" in raw.lower() or ":" in raw):
        aware = moment if moment.tzinfo else moment.replace(tzinfo=zone)
        return aware.timestamp()
    span = parse_span(raw, now, zone)
    if span is None:
        raise InvalidInputError(
            f"could not read the time {quoted(raw)}; try 2023-05-08, 2023-05, 'last week', "
            "'上个月' or 'в прошлом году'"
        )
    return span.end if end else span.start


def find_about(text: str, said: datetime, zone: tzinfo) -> TimeSpan | None:
    """The time a message is about, when it names one ("last week", "昨天", "в прошлом
    году"), resolved against the moment it was said; None when it names none."""
    for match in _ABOUT.finditer(text):
        span = parse_span(match.group(0), said, zone)
        if span is not None:
            return span
    return None


def time_range(
    *,
    when: str | None,
    after: str | None,
    before: str | None,
    now: datetime,
    zone: tzinfo,
) -> tuple[float | None, float | None, TimeSpan | None]:
    """A search's range from its `when` phrase and `after`/`before` bounds (both kept:
    the narrower wins), and the span `when` names, for ranking. Raises InvalidInputError
    for a phrase it cannot read, or a range that ends before it starts."""
    start = None if after is None else parse_bound(after, now, zone, end=False)
    end = None if before is None else parse_bound(before, now, zone, end=True)
    span = None
    if when is not None:
        span = parse_span(when, now, zone)
        if span is None:
            parse_bound(when, now, zone, end=False)  # a moment, or the one-line reason
            raise InvalidInputError(f"'when' needs a span such as 'last week', not {quoted(when)}")
        start = span.start if start is None else max(start, span.start)
        end = span.end if end is None else min(end, span.end)
    if start is not None and end is not None and end <= start:
        raise InvalidInputError("the time range is empty: 'before' is not after 'after'")
    return start, end, span


def _start(day: date, zone: tzinfo) -> float:
    return datetime.combine(day, time(), zone).timestamp()


Days = tuple[date, date]  # first day, and the day after the last


def _iso(phrase: str) -> Days | None:
    match = re.fullmatch(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", phrase)
    if match is None:
        match = re.fullmatch(r"(\d{4})年(?:(\d{1,2})月(?:(\d{1,2})[日号])?)?", phrase)
    if match is None:
        return None
    year, month, day = (int(g) if g else None for g in match.groups())
    assert year is not None
    try:
        if month is None:
            return date(year, 1, 1), date(year + 1, 1, 1)
        if day is None:
            return _month(year, month)
        first = date(year, month, day)
    except ValueError:
        return None
    return first, first + timedelta(days=1)


def _month(year: int, month: int) -> Days:
    first = date(year, month, 1)
    following = date(year + month // 12, month % 12 + 1, 1)
    return first, following


def _named_day(phrase: str, today: date) -> Days | None:
    offsets = {"today": 0, "yesterday": -1, "tomorrow": 1, "day before yesterday": -2,
               "今天": 0, "昨天": -1, "前天": -2, "明天": 1, "后天": 2, "сегодня": 0,
               "вчера": -1, "позавчера": -2, "завтра": 1, "послезавтра": 2}  # fmt: skip
    offset = offsets.get(phrase.removeprefix("the "))
    if offset is None:
        return None
    day = today + timedelta(days=offset)
    return day, day + timedelta(days=1)


def _period(phrase: str, today: date) -> Days | None:
    """This/last/next week, month or year in the three languages."""
    words = {
        "week": ("this week", "last week", "next week", "本周", "上周", "下周", "这周",
                 "на этой неделе", "на прошлой неделе", "на следующей неделе"),
        "month": ("this month", "last month", "next month", "本月", "上个月", "下个月", "这个月",
                  "в этом месяце", "в прошлом месяце", "в следующем месяце"),
        "year": ("this year", "last year", "next year", "今年", "去年", "明年", "今年",
                 "в этом году", "в прошлом году", "в следующем году"),
    }  # fmt: skip
    for unit, names in words.items():
        if phrase not in names:
            continue
        position = names.index(phrase)
        shift = {0: 0, 1: -1, 2: 1, 3: 0, 4: -1, 5: 1, 6: 0, 7: 0, 8: -1, 9: 1}[position]
        if unit == "week":
            monday = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
            return monday, monday + timedelta(weeks=1)
        if unit == "month":
            index = today.year * 12 + today.month - 1 + shift
            return _month(index // 12, index % 12 + 1)
        year = today.year + shift
        return date(year, 1, 1), date(year + 1, 1, 1)
    return None


def _ago(phrase: str, today: date) -> Days | None:
    """ "3 days ago", "2 weeks ago", "三天前", "2周前", "3 дня назад": that day (or week)."""
    match = (
        re.fullmatch(r"(\d+|a|an|one|two|three) (day|week)s? ago", phrase)
        or re.fullmatch(r"([\d一二两三四五六七八九十]+)个?(天|日|周|星期)前", phrase)
        or re.fullmatch(r"(\d+) (дн|день|недел)\w* назад", phrase)
    )
    if match is None:
        return None
    count_text, unit = match.groups()
    count = _count(count_text)
    days = _UNIT_DAYS[unit] * count
    first = today - timedelta(days=days)
    return first, first + timedelta(days=_UNIT_DAYS[unit])


def _count(text: str) -> int:
    if text.isdigit():
        return int(text)
    english = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}
    if text in english:
        return english[text]
    if text == "十":
        return 10
    if text.startswith("十"):
        return 10 + _CN_NUMBERS[text[1]]
    if text.endswith("十"):
        return _CN_NUMBERS[text[0]] * 10
    return _CN_NUMBERS.get(text[0], 1)


def _month_year(phrase: str, today: date) -> Days | None:
    """ "May 2023", "in may", "в мае 2023", "2023年5月" (a month alone: its latest past)."""
    phrase = re.sub(r"^(in|during|в|во) ", "", phrase)
    match = re.fullmatch(r"([a-zа-яё]+),? ?(\d{4})?", phrase)
    if match is None:
        return None
    name, year_text = match.groups()
    month = None
    if name in _EN_MONTHS or name in {m[:3] for m in _EN_MONTHS}:
        month = [m[:3] for m in _EN_MONTHS].index(name[:3]) + 1
    else:
        for number, stem in enumerate(_RU_MONTHS, 1):
            if name.startswith(stem) and (stem != "ма" or name in ("май", "мая", "мае")):
                month = number
                break
    if month is None:
        return None
    year = int(year_text) if year_text else today.year - (month > today.month)
    return _month(year, month)


def _weekday(phrase: str, today: date) -> Days | None:
    """ "last tuesday", "on friday", "上周二", "周五", "в прошлый вторник": the latest such
    day before today (one week earlier again for "last"/"上" in a phrase with it)."""
    weekday: int | None = None
    earlier = False
    match = re.fullmatch(r"(?:(last|this|on) )?([a-z]+)", phrase)
    if match and match.group(2) in _EN_WEEKDAYS:
        weekday, earlier = _EN_WEEKDAYS.index(match.group(2)), match.group(1) == "last"
    # `normalize` has already turned Chinese numerals into digits: "上周二" is "上周2".
    zh = re.fullmatch(r"(上)?(?:周|星期|礼拜)([1-6日天])", phrase)
    if zh:
        day_name = zh.group(2)
        weekday = int(day_name) - 1 if day_name.isdigit() else 6
        earlier = zh.group(1) is not None
    ru = re.fullmatch(r"(?:во? )?(прошл\w+ )?([а-яё]+)", phrase)
    if ru and weekday is None:
        for number, stem in enumerate(_RU_WEEKDAYS):
            if ru.group(2).startswith(stem):
                weekday, earlier = number, ru.group(1) is not None
    if weekday is None:
        return None
    back = (today.weekday() - weekday) % 7 or 7
    day = today - timedelta(days=back)
    if earlier and zh:
        # "上周二" is Tuesday of last week, not merely the latest Tuesday.
        monday = today - timedelta(days=today.weekday() + 7)
        day = monday + timedelta(days=weekday)
    return day, day + timedelta(days=1)
