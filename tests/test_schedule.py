"""Schedule math: a pure function of (schedule, anchor, now, zone), right across DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore.errors import InvalidInputError
from lore.schedule import (
    Cron,
    Daily,
    Interval,
    Weekly,
    localize,
    next_after,
    parse_schedule,
)

NEW_YORK = ZoneInfo("America/New_York")
TAIPEI = ZoneInfo("Asia/Taipei")


def ny(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=NEW_YORK)


def local_fires(schedule: str, start: datetime, count: int, zone: ZoneInfo) -> list[str]:
    """The next `count` fire times after `start`, as local wall times with their offset."""
    parsed = parse_schedule(schedule)
    fires, now = [], start
    for _ in range(count):
        nxt = next_after(parsed, start, now, zone)
        assert nxt is not None
        fires.append(nxt.astimezone(zone).strftime("%m-%d %H:%M%z"))
        now = nxt
    return fires


# -- parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("daily 09:00", "daily 09:00"),
        ("daily 9am, 9pm", "daily 09:00,21:00"),
        ("every day at 7:30", "daily 07:30"),
        ("weekly mon,wed 18:30", "weekly mon,wed 18:30"),
        ("weekly fri-mon 10:00", "weekly mon,fri,sat,sun 10:00"),
        ("every monday at 9am", "weekly mon 09:00"),
        ("every monday at 9 am", "weekly mon 09:00"),
        ("weekdays 08:00", "weekly mon,tue,wed,thu,fri 08:00"),
        ("weekends 10:00", "weekly sat,sun 10:00"),
        ("every 15m", "every 15m"),
        ("every 15 minutes", "every 15m"),
        ("every 2h", "every 2h"),
        ("every 90 min", "every 90m"),
        ("hourly", "every 1h"),
        ("cron 0 9 * * 1-5", "cron 0 9 * * 1-5"),
        ("0 9 * * mon-fri", "cron 0 9 * * mon-fri"),
        ("@daily", "cron 0 0 * * *"),
    ],
)
def test_recurrence_text_parses_to_a_canonical_form_that_round_trips(
    text: str, canonical: str
) -> None:
    schedule = parse_schedule(text)
    assert schedule.text == canonical
    assert parse_schedule(schedule.text) == schedule


def test_structured_forms_parse_like_text() -> None:
    assert parse_schedule({"kind": "daily", "times": ["09:00"]}) == parse_schedule("daily 09:00")
    assert parse_schedule({"kind": "weekly", "days": ["mon", "wed"], "time": "18:30"}) == (
        parse_schedule("weekly mon,wed 18:30")
    )
    assert parse_schedule({"kind": "every", "minutes": 15}) == Interval(900)
    assert parse_schedule({"kind": "cron", "expr": "0 9 * * 1-5"}) == parse_schedule("0 9 * * 1-5")


def test_a_missing_time_or_day_comes_from_the_first_fire_time() -> None:
    first = datetime(2026, 12, 2, 7, 45, tzinfo=TAIPEI)  # a Wednesday
    assert parse_schedule("daily", default=first).text == "daily 07:45"
    assert parse_schedule("weekly", default=first).text == "weekly wed 07:45"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("cron 0 0 31 2 *", "never fires"),
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6,9,11 *", "never fires"),
        ("cron 61 * * * *", "out of range"),
        ("cron ² * * * *", "cannot read"),  # "²".isdigit(), yet int() refuses it
        ("cron 0 9 * *", "5 fields"),
        ("every 30s", "unknown recurrence"),
        ("every 0m", "too frequent"),
        ("every 2 days", "daily HH:MM"),
        ("daily", "needs a time"),
        ("daily 25:00", "not a valid time"),
        ("weekly xyz 9:00", "unknown day"),
        ("sometimes", "unknown recurrence"),
    ],
)
def test_unusable_recurrences_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        parse_schedule(text)


# -- wall-clock schedules -------------------------------------------------------------


def test_daily_fires_at_the_local_time_in_the_conversations_zone() -> None:
    now = datetime(2026, 11, 30, 10, 0, tzinfo=TAIPEI)
    nxt = next_after(parse_schedule("daily 09:00"), now, now, TAIPEI)
    assert nxt == datetime(2026, 12, 1, 1, 0, tzinfo=UTC)  # 09:00 +08:00


def test_next_is_strictly_after_now() -> None:
    at_nine = datetime(2026, 11, 30, 9, 0, tzinfo=TAIPEI)
    nxt = next_after(parse_schedule("daily 09:00"), at_nine, at_nine, TAIPEI)
    assert nxt == datetime(2026, 12, 1, 9, 0, tzinfo=TAIPEI)


def test_weekly_fires_on_the_listed_days_only() -> None:
    monday = datetime(2026, 11, 30, 19, 0, tzinfo=TAIPEI)
    fires = local_fires("weekly mon,wed 18:30", monday, 3, TAIPEI)
    assert fires == ["12-02 18:30+0800", "12-07 18:30+0800", "12-09 18:30+0800"]


def test_cron_with_both_day_fields_matches_either_like_vixie_cron() -> None:
    start = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # Saturday
    fires = local_fires("0 9 1 * mon", start, 3, ZoneInfo("UTC"))
    assert fires == ["11-30 09:00+0000", "12-01 09:00+0000", "12-07 09:00+0000"]


def test_cron_sunday_is_0_or_7_and_names_work() -> None:
    sundays = [parse_schedule(e) for e in ("0 9 * * 0", "0 9 * * 7", "0 9 * * sun")]
    assert all(isinstance(s, Cron) and s.weekdays == {6} for s in sundays)


def test_cron_on_february_29_waits_for_a_leap_year() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    nxt = next_after(parse_schedule("0 0 29 2 *"), now, now, UTC)
    assert nxt == datetime(2028, 2, 29, tzinfo=UTC)


def test_nothing_fires_before_the_anchor() -> None:
    now = datetime(2026, 11, 30, 8, 0, tzinfo=TAIPEI)
    anchor = datetime(2026, 12, 5, 9, 0, tzinfo=TAIPEI)
    assert next_after(parse_schedule("daily 09:00"), anchor, now, TAIPEI) == anchor


# -- daylight saving time (America/New_York: 2026-03-08 springs forward, 2026-11-01 falls back)


def test_a_daily_time_skipped_by_spring_forward_fires_when_the_gap_ends() -> None:
    start = ny(2026, 3, 7, 12, 0)
    fires = local_fires("daily 02:30", start, 3, NEW_YORK)
    assert fires == ["03-08 03:00-0400", "03-09 02:30-0400", "03-10 02:30-0400"]


def test_a_daily_time_repeated_by_fall_back_fires_once() -> None:
    start = ny(2026, 10, 31, 12, 0)
    fires = local_fires("daily 01:30", start, 3, NEW_YORK)
    assert fires == ["11-01 01:30-0400", "11-02 01:30-0500", "11-03 01:30-0500"]


def test_daily_keeps_its_wall_time_across_both_changes() -> None:
    spring = local_fires("daily 09:00", ny(2026, 3, 7, 10, 0), 2, NEW_YORK)
    autumn = local_fires("daily 09:00", ny(2026, 10, 31, 10, 0), 2, NEW_YORK)
    assert spring == ["03-08 09:00-0400", "03-09 09:00-0400"]
    assert autumn == ["11-01 09:00-0500", "11-02 09:00-0500"]


def test_an_every_hour_cron_runs_in_both_halves_of_the_repeated_hour() -> None:
    fires = local_fires("*/30 * * * *", ny(2026, 11, 1, 0, 50), 6, NEW_YORK)
    assert fires == [
        "11-01 01:00-0400",
        "11-01 01:30-0400",
        "11-01 01:00-0500",
        "11-01 01:30-0500",
        "11-01 02:00-0500",
        "11-01 02:30-0500",
    ]


def test_a_fixed_hour_cron_in_the_repeated_hour_fires_once() -> None:
    fires = local_fires("30 1 * * *", ny(2026, 10, 31, 12, 0), 2, NEW_YORK)
    assert fires == ["11-01 01:30-0400", "11-02 01:30-0500"]


def test_cron_times_inside_the_spring_gap_collapse_to_one_fire() -> None:
    fires = local_fires("*/30 * * * *", ny(2026, 3, 8, 1, 10), 4, NEW_YORK)
    assert fires == ["03-08 01:30-0500", "03-08 03:00-0400", "03-08 03:30-0400", "03-08 04:00-0400"]


def test_localize_maps_a_gap_to_its_end_and_a_repeat_to_its_first_occurrence() -> None:
    assert localize(datetime(2026, 3, 8, 2, 30), NEW_YORK) == ny(2026, 3, 8, 3, 0)
    repeated = localize(datetime(2026, 11, 1, 1, 30), NEW_YORK)
    assert repeated.utcoffset() == timedelta(hours=-4)


# -- intervals --------------------------------------------------------------------------


def test_an_interval_counts_from_its_anchor_so_late_runs_do_not_drift() -> None:
    schedule = parse_schedule("every 15m")
    anchor = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    delivered_late = datetime(2026, 11, 30, 9, 47, 13, tzinfo=UTC)
    assert next_after(schedule, anchor, delivered_late, UTC) == datetime(
        2026, 11, 30, 10, 0, tzinfo=UTC
    )


def test_an_interval_counts_elapsed_time_across_a_dst_change() -> None:
    schedule = parse_schedule("every 2h")
    anchor = ny(2026, 3, 7, 23, 0)  # 04:00 UTC
    nxt = next_after(schedule, anchor, ny(2026, 3, 8, 3, 30), NEW_YORK)
    assert nxt == datetime(2026, 3, 8, 8, 0, tzinfo=UTC)  # 04:00 EDT, 4 real hours later
    assert nxt - anchor == timedelta(hours=4)


def test_an_anchor_in_the_future_is_the_next_fire() -> None:
    anchor = datetime(2026, 12, 1, tzinfo=UTC)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    assert next_after(Interval(3600), anchor, now, UTC) == anchor


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError):
        next_after(
            Daily((datetime(2026, 1, 1).time(),)), datetime(2026, 1, 1), datetime.now(UTC), UTC
        )


# -- cron agrees with croniter where croniter is right (a zone without DST) ----------------

CRONS = ["*/7 * * * *", "0 9 * * 1-5", "15 */3 1,15 * *", "0 0 1 */2 *", "5 4 * * sun",
         "0 12 13 * fri", "30 2 * 2 *", "0 0 29 2 *"]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    expr=st.sampled_from(CRONS),
    moment=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1)),
)
def test_cron_next_matches_croniter_in_utc(expr: str, moment: datetime) -> None:
    from croniter import croniter

    now = moment.replace(tzinfo=UTC, microsecond=0)
    expected = croniter(expr, now).get_next(datetime)
    assert next_after(parse_schedule(expr), now, now, UTC) == expected


def test_weekly_from_a_structured_form_is_a_weekly() -> None:
    assert isinstance(
        parse_schedule({"kind": "weekly", "days": "sat"}, default=ny(2026, 1, 1)), Weekly
    )
