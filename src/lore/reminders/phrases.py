"""Small grammars for time phrases in English, Chinese and Russian.

`relative` reads an offset ("in 10 minutes", "半小时后", "через полтора часа");
`absolute` splits a phrase into day, hour and period parts ("明天早上9点", "завтра в 9",
"next monday at 10am"). Each accounts for every word of the phrase or returns None, so
nothing is silently dropped; `when.py` turns the parts into a moment.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import timedelta

__all__ = ["Parts", "absolute", "normalize", "relative"]

_CN_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2, "兩": 2}
_EN_NUMBERS: dict[str, float] = {
    w: float(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"a": 1, "an": 1, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "couple of": 2,
     "a couple of": 2, "half an": 0.5, "half a": 0.5}  # fmt: skip
_RU_NUMBERS: dict[str, float] = {
    **dict.fromkeys(("один", "одна", "одну"), 1.0),
    **dict.fromkeys(("два", "две", "пару", "пара"), 2.0),
    "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9,
    "десять": 10, "одиннадцать": 11, "двенадцать": 12, "пятнадцать": 15, "двадцать": 20,
    "тридцать": 30, "сорок": 40, "пятьдесят": 50, "полтора": 1.5, "полторы": 1.5,
}  # fmt: skip
_UNITS = {  # unit word pattern -> seconds
    "en": [(r"s|secs?|seconds?", 1), (r"m|mins?|minutes?", 60), (r"h|hrs?|hours?", 3600),
           (r"d|days?", 86400), (r"w|wks?|weeks?", 604800)],
    "ru": [(r"сек\w*", 1), (r"мин\w*", 60), (r"час\w*|ч", 3600), (r"день|дн\w+|сут\w+", 86400),
           (r"недел\w+", 604800)],
}  # fmt: skip
_ZH_UNITS = {"秒": 1, "分": 60, "刻": 900, "小": 3600, "钟": 3600, "鐘": 3600, "天": 86400,
             "日": 86400}  # fmt: skip
_ZH_PERIODS = {"凌": "am", "早": "am", "上": "am", "中": "noon", "下": "pm", "傍": "evening",
               "晚": "evening", "夜": "night", "今": "tonight"}  # fmt: skip
_RU_WEEKDAYS = ("понедельник", "вторник", "сред", "четверг", "пятниц", "суббот", "воскресенье")
_RU_PERIODS = {"полд": "noon", "полн": "midnight", "утро": "am", "утра": "am", "днем": "pm",
               "дня": "pm", "вече": "evening", "ночь": "night", "ночи": "night"}  # fmt: skip
_EN_PERIODS = {"noon": "noon", "midday": "noon", "midnight": "midnight", "morning": "am",
               "afternoon": "pm", "evening": "evening", "night": "night"}  # fmt: skip
_EN_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
              "september", "october", "november", "december")  # fmt: skip
# A month's name or its abbreviation ("dec", "dec.", "sept"); read by its first 3 letters.
_EN_MONTH = "(" + "|".join((*_EN_MONTHS, *(m[:3] for m in _EN_MONTHS), "sept")) + r")\.?"
_EN_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_RU_MONTHS = ("января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа",
              "сентября", "октября", "ноября", "декабря")  # fmt: skip


def normalize(text: str) -> str:
    """Lower case, half-width, "ё" as "е", Chinese numerals as digits, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower().replace("ё", "е")
    text = re.sub(r"[零〇一二两兩三四五六七八九十百]+", lambda m: str(_cn_number(m[0])), text)
    return " ".join(text.strip(" .。!！?？,，").split())


def _cn_number(numeral: str) -> int:
    if "十" not in numeral and "百" not in numeral:
        return int("".join(str(_CN_DIGITS[c]) for c in numeral))
    total = current = 0
    for char in numeral:
        if char in "十百":
            total, current = total + (current or 1) * (10 if char == "十" else 100), 0
        else:
            current = _CN_DIGITS[char]
    return total + current


# -- relative ------------------------------------------------------------------------


def relative(phrase: str) -> tuple[timedelta, timedelta] | None:
    """The offset a relative phrase names, as (calendar days, elapsed time), or None if the
    phrase is not one. Days move the wall clock ("in 1 day" keeps the time across a DST
    change); hours and minutes are real elapsed time."""
    if match := re.fullmatch(r"in (.+)|(.+) (?:from now|later)", phrase):
        return _duration(match[1] or match[2], "en")
    if match := re.fullmatch(r"(?:через|спустя) (.+)", phrase):
        return _duration(match[1], "ru")
    match = re.fullmatch(
        r"(?P<pre>再?[过過])?(?P<n>\d+(?:\.\d+)?)?(?:个|個)?(?P<h1>半)?(?P<u>秒钟?|秒鐘?|分钟|分鐘|分|"
        r"刻钟|刻鐘|小时|小時|钟头|鐘頭|天|日|周|週|星期|礼拜|禮拜)(?P<h2>半)?(?P<post>之?[后後]|以[后後])?",
        phrase.replace(" ", ""),
    )
    if not match:
        return None
    half = bool(match["h1"] or match["h2"])
    if (match["n"] is None and not half) or not (match["pre"] or match["post"]):
        return None
    seconds = _ZH_UNITS.get(match["u"][0], 604800)
    return _split(float(match["n"] or 0) + 0.5 * half, seconds)


def _split(count: float, unit: int) -> tuple[timedelta, timedelta]:
    amount = timedelta(seconds=count * unit)
    return (amount, timedelta(0)) if unit >= 86400 else (timedelta(0), amount)


def _duration(text: str, language: str) -> tuple[timedelta, timedelta] | None:
    """Sum "2 hours 30 minutes", "an hour and a half", "полтора часа", "полчаса"."""
    text = re.sub(r"\bпол(час\w*|минут\w*)", r"0.5 \1", text.replace(",", "."))
    words = _EN_NUMBERS if language == "en" else _RU_NUMBERS
    spelled = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    number = rf"\d+(?:\.\d+)?|(?:{spelled})(?![a-zа-я])"
    units = "|".join(f"(?:{pattern})" for pattern, _ in _UNITS[language])
    joiner = r"(?:\s*(?:,|and|и)\s*|\s+)?"
    item = re.compile(
        rf"{joiner}(?P<half>and a half|с половиной)(?![a-zа-я])|{joiner}"
        rf"(?:(?P<n>(?:{number})(?:\s+(?:{number}))?)\s*)?(?P<u>{units})(?![a-zа-я])"
    )
    days, elapsed = timedelta(0), timedelta(0)
    last_unit, position = 0, 0
    while position < len(text):
        match = item.match(text, position)
        if not match or match.end() == position:
            return None
        if match["half"] and not last_unit:
            return None
        if not match["half"]:
            last_unit = next(s for p, s in _UNITS[language] if re.fullmatch(p, match["u"]))
        count = 0.5 if match["half"] else _number(match["n"], words)
        more_days, more_elapsed = _split(count, last_unit)
        days, elapsed = days + more_days, elapsed + more_elapsed
        position = match.end()
    return (days, elapsed) if last_unit else None


def _number(text: str | None, words: dict[str, float]) -> float:
    if text is None:
        return 1.0  # "через час": the unit alone means one
    if text in words:
        return words[text]
    return sum(float(p) if p[0].isdigit() else words[p] for p in text.split())


# -- absolute ------------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    days: int | None = None  # 0 today, 1 tomorrow, ...
    weekday: int | None = None  # 0 = Monday
    week_rule: str = "upcoming"  # upcoming | next (never today) | week+N (calendar week)
    month_day: tuple[int, int] | None = None
    hour: int | None = None
    minute: int = 0
    period: str = ""  # am | noon | pm | evening | tonight | night | midnight
    literal: bool = False  # "09:00", "21:00": the hour is already on a 24-hour clock


def absolute(phrase: str) -> Parts | None:
    """The parts of a day/time phrase, or None unless every word was understood."""
    return _zh(phrase.replace(" ", "")) or _ru(phrase) or _en(phrase)


def _zh(phrase: str) -> Parts | None:
    match = re.fullmatch(
        r"(?P<day>大后天|大後天|昨天|今天|今日|明天|明日|后天|後天)?"
        r"(?:(?P<wk>下下|下|这|這|本)?(?:个|個)?(?:周|週|星期|礼拜|禮拜)(?P<wd>[1-7日天]))?"
        r"(?:(?P<mon>\d{1,2})月(?P<dom>\d{1,2})[日号號])?"
        r"(?P<per>凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明早|明晚|夜里|夜裡|晚)?"
        r"(?:(?P<h>\d{1,2})(?:[点點]钟?鐘?(?:(?P<m>\d{1,2})分?|(?P<half>半)|(?P<q>[13])刻)?"
        r"|:(?P<mm>\d{2})))?",
        phrase,
    )
    if not match or not match[0]:
        return None
    day = {"昨": -1, "今": 0, "明": 1, "后": 2, "後": 2, "大": 3}.get((match["day"] or " ")[0])
    period = match["per"] or ""
    if period in ("今晚", "明早", "明晚"):
        if day is not None:
            return None
        day = 0 if period == "今晚" else 1
    per = {"明早": "am", "明晚": "evening"}.get(period) or _ZH_PERIODS.get(period[:1], "")
    wd = match["wd"]
    weekday = None if wd is None else (int(wd) - 1 if wd.isdigit() else 6)  # 日/天: Sunday
    rule = {"下": "week+1", "下下": "week+2", "这": "week+0", "這": "week+0", "本": "week+0"}
    minute = int(match["m"] or match["mm"] or 0) + 30 * bool(match["half"])
    minute += int(match["q"] or 0) * 15
    return Parts(
        days=day,
        weekday=weekday,
        week_rule=rule.get(match["wk"] or "", "upcoming"),
        month_day=(int(match["mon"]), int(match["dom"])) if match["mon"] else None,
        hour=int(match["h"]) if match["h"] else None,
        minute=minute,
        period=per,
        literal=bool(match["mm"]) and match["h"][:1] == "0",
    )


def _ru(phrase: str) -> Parts | None:
    if not re.search(r"[а-я]", phrase):
        return None
    parts, rest = Parts(), f" {phrase} "
    if m := re.search(r" (вчера|сегодня|завтра|послезавтра) ", rest):
        parts = replace(parts, days=("вчера", "сегодня", "завтра", "послезавтра").index(m[1]) - 1)
        rest = rest.replace(m[0], " ", 1)
    if m := re.search(
        r" (?:во? )?(следующ\w+ )?(понедельник|вторник|сред[ау]|четверг|пятниц[ау]|"
        r"суббот[ау]|воскресенье) ",
        rest,
    ):
        weekday = next(i for i, k in enumerate(_RU_WEEKDAYS) if m[2].startswith(k))
        parts = replace(parts, weekday=weekday, week_rule="next" if m[1] else "upcoming")
        rest = rest.replace(m[0], " ", 1)
    if m := re.search(rf" (\d{{1,2}}) ({'|'.join(_RU_MONTHS)}) ", rest):
        month = _RU_MONTHS.index(m[2]) + 1
        parts, rest = replace(parts, month_day=(month, int(m[1]))), rest.replace(m[0], " ", 1)
    if m := re.search(r" (?:в|к) (полдень|полночь) | (утром|днем|вечером|ночью) ", rest):
        period = _RU_PERIODS[(m[1] or m[2])[:4]]
        parts, rest = replace(parts, period=period), rest.replace(m[0], " ", 1)
    if m := re.search(
        r" (?:(?:в|во|к) )?(\d{1,2})(?:[:.](\d{2}))?(?: час\w*)?(?: (утра|дня|вечера|ночи))? ",
        rest,
    ):
        period = _RU_PERIODS[m[3][:4]] if m[3] else parts.period
        hour, minute, literal = int(m[1]), int(m[2] or 0), m[1][0] == "0"
        parts = replace(parts, hour=hour, minute=minute, literal=literal, period=period)
        rest = rest.replace(m[0], " ", 1)
    if rest.strip(" ,") or parts == Parts():
        return None
    return parts


def _en(phrase: str) -> Parts | None:
    parts, rest = Parts(), f" {phrase} "
    if m := re.search(
        r" (yesterday|today|tonight|tomorrow|tmrw|tmr|(?:the )?day after tomorrow) ", rest
    ):
        days = {"yesterday": -1, "today": 0, "tonight": 0}.get(m[1], 2 if "after" in m[1] else 1)
        parts = replace(parts, days=days, period="tonight" if m[1] == "tonight" else "")
        rest = rest.replace(m[0], " ", 1)
    if m := re.search(
        r" (?:(next|this|on) )?(mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|"
        r"thu(?:rs?|rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?) ",
        rest,
    ):
        weekday = ("mon", "tue", "wed", "thu", "fri", "sat", "sun").index(m[2][:3])
        rule = "next" if m[1] == "next" else "upcoming"
        parts, rest = replace(parts, weekday=weekday, week_rule=rule), rest.replace(m[0], " ", 1)
    if m := re.search(
        rf" (?:on )?(?:the )?{_EN_DAY}(?: of)? {_EN_MONTH} | (?:on )?{_EN_MONTH} {_EN_DAY} ", rest
    ):
        month = [name[:3] for name in _EN_MONTHS].index((m[2] or m[3])[:3]) + 1
        day = int(m[1] or m[4])
        parts, rest = replace(parts, month_day=(month, day)), rest.replace(m[0], " ", 1)
    if m := re.search(
        r" (?:at )?(noon|midday|midnight) | (?:in the |this )?(morning|afternoon|evening|night) ",
        rest,
    ):
        period = _EN_PERIODS[m[1] or m[2]]
        parts, rest = replace(parts, period=period), rest.replace(m[0], " ", 1)
    if m := re.search(r" (at |by )?(\d{1,2})(?::(\d{2}))? ?(?:([ap])\.?m\.?)? ", rest):
        day_named = (parts.days, parts.weekday, parts.month_day) != (None, None, None)
        if not (m[1] or m[3] or m[4] or day_named):
            return None  # a lone number is not a time
        period = {"a": "am", "p": "pm"}.get(m[4] or "", parts.period)
        literal = m[2][0] == "0" or (m[4] is None and int(m[2]) > 12)
        hour, minute = int(m[2]), int(m[3] or 0)
        parts = replace(parts, hour=hour, minute=minute, period=period, literal=literal)
        rest = rest.replace(m[0], " ", 1)
    if re.sub(r"\b(at|on|the|in)\b", "", rest).strip(" ,") or parts == Parts():
        return None
    return parts
