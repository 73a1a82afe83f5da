"""Reading `when`: ISO-8601 and EN/ZH/RU phrases, against an explicit now and zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from lore.errors import InvalidInputError
from lore.reminders.when import format_local, parse_when

TAIPEI = ZoneInfo("Asia/Taipei")
NEW_YORK = ZoneInfo("America/New_York")
# Monday 2026-11-30, 17:00 in Taipei (the `clock` fixture's moment).
EVENING = datetime(2026, 11, 30, 17, 0, tzinfo=TAIPEI)
MORNING = datetime(2026, 11, 30, 8, 0, tzinfo=TAIPEI)


def at(phrase: str, now: datetime = EVENING, zone: ZoneInfo = TAIPEI) -> str:
    return parse_when(phrase, now, zone).strftime("%a %Y-%m-%d %H:%M")


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        # the phrases the issue lists
        ("in 10 minutes", "Mon 2026-11-30 17:10"),
        ("tomorrow 9am", "Tue 2026-12-01 09:00"),
        ("10分钟后", "Mon 2026-11-30 17:10"),
        ("半小时后", "Mon 2026-11-30 17:30"),
        ("明天早上9点", "Tue 2026-12-01 09:00"),
        ("下午3点", "Tue 2026-12-01 15:00"),  # 15:00 today has passed
        ("下周一", "Mon 2026-12-07 09:00"),
        ("через 10 минут", "Mon 2026-11-30 17:10"),
        ("завтра в 9", "Tue 2026-12-01 09:00"),
        # English
        ("in 2 hours", "Mon 2026-11-30 19:00"),
        ("in an hour and a half", "Mon 2026-11-30 18:30"),
        ("in half an hour", "Mon 2026-11-30 17:30"),
        ("in 1h30m", "Mon 2026-11-30 18:30"),
        ("in 3 days", "Thu 2026-12-03 17:00"),
        ("20 minutes from now", "Mon 2026-11-30 17:20"),
        ("at 5pm", "Tue 2026-12-01 17:00"),
        ("at 9", "Mon 2026-11-30 21:00"),  # a bare hour means its next occurrence
        ("tomorrow at noon", "Tue 2026-12-01 12:00"),
        ("tonight at 8", "Mon 2026-11-30 20:00"),
        ("next monday", "Mon 2026-12-07 09:00"),
        ("friday at 10am", "Fri 2026-12-04 10:00"),
        ("tomorrow morning", "Tue 2026-12-01 09:00"),
        ("at midnight", "Tue 2026-12-01 00:00"),
        # Chinese, simplified and traditional, numerals in digits or characters
        ("十分钟后", "Mon 2026-11-30 17:10"),
        ("一个半小时后", "Mon 2026-11-30 18:30"),
        ("两个小时后", "Mon 2026-11-30 19:00"),
        ("二十分钟后", "Mon 2026-11-30 17:20"),
        ("過10分鐘", "Mon 2026-11-30 17:10"),
        ("半小時後", "Mon 2026-11-30 17:30"),
        ("3天后", "Thu 2026-12-03 17:00"),
        ("明天早上九点半", "Tue 2026-12-01 09:30"),
        ("明天早上9點", "Tue 2026-12-01 09:00"),
        ("明天9点15分", "Tue 2026-12-01 09:15"),
        ("下午三点一刻", "Tue 2026-12-01 15:15"),
        ("今晚8点", "Mon 2026-11-30 20:00"),
        ("晚上8点半", "Mon 2026-11-30 20:30"),
        ("中午12点", "Tue 2026-12-01 12:00"),
        ("后天上午10点", "Wed 2026-12-02 10:00"),
        ("下星期三晚上8点", "Wed 2026-12-09 20:00"),
        ("下禮拜五", "Fri 2026-12-11 09:00"),
        ("周日", "Sun 2026-12-06 09:00"),
        ("12月25日晚上8点", "Fri 2026-12-25 20:00"),
        # Russian
        ("через час", "Mon 2026-11-30 18:00"),
        ("через полчаса", "Mon 2026-11-30 17:30"),
        ("через полтора часа", "Mon 2026-11-30 18:30"),
        ("через пять минут", "Mon 2026-11-30 17:05"),
        ("через 2 часа 30 минут", "Mon 2026-11-30 19:30"),
        ("через 1,5 часа", "Mon 2026-11-30 18:30"),
        ("завтра в 9:30", "Tue 2026-12-01 09:30"),
        ("сегодня в 18:30", "Mon 2026-11-30 18:30"),
        ("в понедельник", "Mon 2026-12-07 09:00"),  # today is Monday: the next one
        ("в понедельник в 10", "Mon 2026-12-07 10:00"),
        ("в 3 часа дня", "Tue 2026-12-01 15:00"),
        ("в 9 вечера", "Mon 2026-11-30 21:00"),
        ("завтра утром", "Tue 2026-12-01 09:00"),
        ("послезавтра в 8 утра", "Wed 2026-12-02 08:00"),
        ("в следующую среду", "Wed 2026-12-02 09:00"),
        # ISO-8601
        ("2026-12-01T09:00:00+08:00", "Tue 2026-12-01 09:00"),
        ("2026-12-01T01:00:00Z", "Tue 2026-12-01 09:00"),
        ("2026-12-01 09:00", "Tue 2026-12-01 09:00"),  # naive: the conversation's zone
        ("2026-12-01", "Tue 2026-12-01 09:00"),
    ],
)
def test_phrases_name_the_expected_local_time(phrase: str, expected: str) -> None:
    assert at(phrase) == expected


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("下午3点", "Mon 2026-11-30 15:00"),
        ("9点", "Mon 2026-11-30 09:00"),
        ("at 5pm", "Mon 2026-11-30 17:00"),
        ("сегодня в 18:30", "Mon 2026-11-30 18:30"),
        ("tonight", "Mon 2026-11-30 20:00"),
    ],
)
def test_a_time_of_day_still_ahead_today_means_today(phrase: str, expected: str) -> None:
    assert at(phrase, MORNING) == expected


def test_the_result_is_aware_in_the_conversations_zone() -> None:
    result = parse_when("in 10 minutes", EVENING, TAIPEI)
    assert result.tzinfo == TAIPEI
    assert result - EVENING == timedelta(minutes=10)


def test_an_iso_time_with_another_offset_is_kept_as_that_instant() -> None:
    result = parse_when("2026-12-01T09:00:00-05:00", EVENING, TAIPEI)
    assert result == datetime(2026, 12, 1, 14, 0, tzinfo=UTC)


def test_format_local_states_weekday_time_and_zone() -> None:
    assert format_local(datetime(2026, 12, 1, 1, 0, tzinfo=UTC), TAIPEI) == (
        "Tue 2026-12-01 09:00 (Asia/Taipei)"
    )


# -- daylight saving time -----------------------------------------------------------------


def test_a_wall_time_skipped_by_spring_forward_moves_to_the_end_of_the_gap() -> None:
    saturday = datetime(2026, 3, 7, 12, 0, tzinfo=NEW_YORK)
    assert at("tomorrow 2:30am", saturday, NEW_YORK) == "Sun 2026-03-08 03:00"


def test_in_n_days_keeps_the_wall_time_but_in_n_hours_counts_real_hours() -> None:
    saturday = datetime(2026, 3, 7, 12, 0, tzinfo=NEW_YORK)
    assert at("in 1 day", saturday, NEW_YORK) == "Sun 2026-03-08 12:00"
    assert at("in 24 hours", saturday, NEW_YORK) == "Sun 2026-03-08 13:00"


# -- errors: one clear line, in the user's terms ----------------------------------------------


@pytest.mark.parametrize(
    "phrase",
    ["blah", "whenever", "随便什么时候", "когда-нибудь", "5", "", "   ", "через вечность"],
)
def test_unparseable_phrases_are_refused(phrase: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        parse_when(phrase, EVENING, TAIPEI)
    message = str(error.value)
    assert "\n" not in message
    assert "in 10 minutes" in message  # says what would work


@pytest.mark.parametrize(
    "phrase",
    [
        "today 8am",
        "今天早上8点",
        "сегодня в 8 утра",
        "2026-11-30T08:00:00+08:00",
        "2020-01-01",
        "这周一",
        "in 0 minutes",
        "yesterday at 9",
        "昨天下午3点",
        "вчера в 9",
    ],
)
def test_times_in_the_past_are_refused_with_the_time_meant(phrase: str) -> None:
    with pytest.raises(InvalidInputError, match="not in the future"):
        parse_when(phrase, EVENING, TAIPEI)


def test_a_past_time_error_shows_both_times() -> None:
    with pytest.raises(InvalidInputError) as error:
        parse_when("today 8am", EVENING, TAIPEI)
    assert "Mon 2026-11-30 08:00 (Asia/Taipei)" in str(error.value)
    assert "it is now Mon 2026-11-30 17:00" in str(error.value)


@pytest.mark.parametrize(
    ("phrase", "reason"),
    [
        ("明天25点", "not a valid time"),
        ("at 13am", "not a valid time"),
        ("2026-02-30T09:00", "not a valid date"),
        ("2月30日", "not a date"),
        ("in 20 years", "could not"),
        ("2099-01-01", "more than 10 years ahead"),
    ],
)
def test_impossible_times_are_refused(phrase: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        parse_when(phrase, EVENING, TAIPEI)


def test_dateparser_is_not_trusted_when_it_ignores_a_number() -> None:
    # dateparser reads "next month at 9" as next month at 17:00: the 9 is dropped.
    with pytest.raises(InvalidInputError, match="the 9 was ignored"):
        parse_when("next month at 9", EVENING, TAIPEI)


def test_dateparser_fills_in_what_our_grammars_do_not_cover() -> None:
    assert at("December 25 at 8pm") == "Fri 2026-12-25 20:00"


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        # A date without a time means 09:00, as "tomorrow" and "12月25日" do, not midnight.
        ("Dec 25", "Fri 2026-12-25 09:00"),
        ("25 December", "Fri 2026-12-25 09:00"),
        ("on the 25th of December", "Fri 2026-12-25 09:00"),
        ("december 25th at 7pm", "Fri 2026-12-25 19:00"),
        ("25 декабря", "Fri 2026-12-25 09:00"),
        ("1 декабря в 18:30", "Tue 2026-12-01 18:30"),
        # "at 10" after a date is 10:00, never the year 2110 dateparser makes of it.
        ("May 4 at 10", "Tue 2027-05-04 10:00"),
        ("4 мая в 10", "Tue 2027-05-04 10:00"),
        ("friday december 25", "Fri 2026-12-25 09:00"),
        ("в пятницу 25 декабря в 8 вечера", "Fri 2026-12-25 20:00"),
    ],
)
def test_a_day_of_a_named_month_is_read_in_english_and_russian(phrase: str, expected: str) -> None:
    assert at(phrase) == expected


def test_february_29_means_the_next_leap_year_s() -> None:
    spring = datetime(2027, 3, 1, 12, 0, tzinfo=TAIPEI)
    assert at("2月29日", spring) == "Tue 2028-02-29 09:00"
    assert at("Feb 29", spring) == "Tue 2028-02-29 09:00"


def test_a_day_a_named_month_does_not_have_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="not a date"):
        parse_when("Feb 30", EVENING, TAIPEI)
    with pytest.raises(InvalidInputError, match="do not agree"):
        parse_when("thursday december 25", EVENING, TAIPEI)


def test_a_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        parse_when("in 10 minutes", datetime(2026, 11, 30, 17, 0), TAIPEI)
