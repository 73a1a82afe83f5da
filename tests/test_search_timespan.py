"""Time phrases a search is about, resolved against the moment they were said, in
English, Chinese and Russian, and memory_search's `when`/`after`/`before`."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

import pytest

from lore.errors import InvalidInputError
from lore.search.timespan import find_about, parse_span, time_range

TAIPEI = ZoneInfo("Asia/Taipei")
# Wednesday 2 December 2026, 10:00 in Taipei.
NOW = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)


def days(text: str, zone: tzinfo = TAIPEI) -> tuple[date, date]:
    span = parse_span(text, NOW, zone)
    assert span is not None, text
    first = datetime.fromtimestamp(span.start, zone)
    last = datetime.fromtimestamp(span.end, zone)
    assert first.time() == last.time() == datetime.min.time()  # whole local days
    return first.date(), last.date()


@pytest.mark.parametrize(
    ("phrase", "first", "after_last"),
    [
        ("yesterday", date(2026, 12, 1), date(2026, 12, 2)),
        ("昨天", date(2026, 12, 1), date(2026, 12, 2)),
        ("вчера", date(2026, 12, 1), date(2026, 12, 2)),
        ("last week", date(2026, 11, 23), date(2026, 11, 30)),
        ("上周", date(2026, 11, 23), date(2026, 11, 30)),
        ("на прошлой неделе", date(2026, 11, 23), date(2026, 11, 30)),
        ("last month", date(2026, 11, 1), date(2026, 12, 1)),
        ("上个月", date(2026, 11, 1), date(2026, 12, 1)),
        ("в прошлом месяце", date(2026, 11, 1), date(2026, 12, 1)),
        ("last year", date(2025, 1, 1), date(2026, 1, 1)),
        ("去年", date(2025, 1, 1), date(2026, 1, 1)),
        ("в прошлом году", date(2025, 1, 1), date(2026, 1, 1)),
        ("3 days ago", date(2026, 11, 29), date(2026, 11, 30)),
        ("三天前", date(2026, 11, 29), date(2026, 11, 30)),
        ("3 дня назад", date(2026, 11, 29), date(2026, 11, 30)),
        ("last tuesday", date(2026, 12, 1), date(2026, 12, 2)),
        ("上周二", date(2026, 11, 24), date(2026, 11, 25)),
        ("в прошлый вторник", date(2026, 12, 1), date(2026, 12, 2)),
        ("May 2023", date(2023, 5, 1), date(2023, 6, 1)),
        ("в мае 2023", date(2023, 5, 1), date(2023, 6, 1)),
        ("2023年5月", date(2023, 5, 1), date(2023, 6, 1)),
        ("2023-05-08", date(2023, 5, 8), date(2023, 5, 9)),
        ("2023", date(2023, 1, 1), date(2024, 1, 1)),
        ("明天", date(2026, 12, 3), date(2026, 12, 4)),
    ],
)
def test_a_phrase_names_whole_local_days(phrase: str, first: date, after_last: date) -> None:
    assert days(phrase) == (first, after_last)


def test_a_month_alone_means_its_latest_past_one() -> None:
    assert days("in march") == (date(2026, 3, 1), date(2026, 4, 1))
    assert days("december")[0] == date(2026, 12, 1)


def test_the_zone_decides_which_day_yesterday_is() -> None:
    # 02:00 UTC is already 10:00 on 2 December in Taipei, still 1 December in New York.
    assert days("yesterday", ZoneInfo("America/New_York"))[0] == date(2026, 11, 30)


@pytest.mark.parametrize("phrase", ["", "soon", "the meeting", "когда-нибудь", "以后"])
def test_what_names_no_time_gives_none(phrase: str) -> None:
    assert parse_span(phrase, NOW, TAIPEI) is None


def test_a_range_takes_the_narrower_of_when_and_its_bounds() -> None:
    start, end, span = time_range(
        when="last month", after="2026-11-10", before=None, now=NOW, zone=TAIPEI
    )

    assert span is not None and end == span.end
    assert start == datetime(2026, 11, 10, tzinfo=TAIPEI).timestamp()
    assert end - start == timedelta(days=21).total_seconds()


def test_an_unreadable_or_empty_range_is_refused_with_one_line() -> None:
    with pytest.raises(InvalidInputError, match="could not read the time"):
        time_range(when=None, after="whenever", before=None, now=NOW, zone=TAIPEI)
    with pytest.raises(InvalidInputError, match="empty"):
        time_range(when=None, after="2026-11-10", before="2026-11-01", now=NOW, zone=TAIPEI)


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("I went to the support group yesterday, it was great", date(2023, 5, 7)),
        ("我们上个月去了台南", date(2023, 4, 1)),
        ("Мы были на Байкале в прошлом году", date(2022, 1, 1)),
        ("Last week I started pottery", date(2023, 5, 1)),
    ],
)
def test_a_message_names_the_time_it_is_about(text: str, first: date) -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday

    span = find_about(text, said, UTC)

    assert span is not None
    assert datetime.fromtimestamp(span.start, UTC).date() == first


def test_a_message_that_names_no_time_is_about_none() -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

    assert find_about("I may adopt a dog, what do you think?", said, UTC) is None
