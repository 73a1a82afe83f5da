"""What every HistoryLog does: entries under increasing cursors, read in cursor order,
per key, after a cursor; and the cursor Dream has processed up to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from lore.ports.notes import HistoryLog
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "line:group:family"


@pytest.fixture
def history(backend: Backend) -> HistoryLog:
    return backend.history


def fill(history: HistoryLog, *keys: str) -> list[int]:
    return [
        history.append(key, f"summary {n}: 去花莲 / поездка", now=NOW + timedelta(minutes=n)).cursor
        for n, key in enumerate(keys)
    ]


def test_an_entry_keeps_its_key_time_and_trimmed_text(history: HistoryLog) -> None:
    moment = datetime(2026, 11, 30, 17, 5, 30, 123456, tzinfo=ZoneInfo("Asia/Taipei"))
    entry = history.append(HOME, "\n  John planned a trip to 花莲; купил билеты.  \n", now=moment)
    assert (entry.cursor, entry.session_key) == (1, HOME)
    assert entry.content == "John planned a trip to 花莲; купил билеты."
    assert entry.timestamp == "2026-11-30T17:05:30+08:00"
    assert history.entries() == [entry]


def test_cursors_increase_by_one_across_every_key(history: HistoryLog) -> None:
    assert fill(history, HOME, GROUP, HOME) == [1, 2, 3]
    assert [e.cursor for e in history.entries()] == [1, 2, 3]


def test_entries_after_a_cursor_oldest_first_and_at_most_the_oldest_limit(
    history: HistoryLog,
) -> None:
    fill(history, HOME, GROUP, HOME, GROUP, HOME)
    assert [e.cursor for e in history.entries(after=2)] == [3, 4, 5]
    assert [e.cursor for e in history.entries(after=2, limit=2)] == [3, 4]
    assert history.entries(after=5) == []


def test_recent_is_the_newest_entries_of_one_key_oldest_first(history: HistoryLog) -> None:
    fill(history, HOME, GROUP, HOME, GROUP, HOME)
    assert [e.cursor for e in history.recent(HOME)] == [1, 3, 5]
    assert [e.cursor for e in history.recent(HOME, limit=2)] == [3, 5]
    assert [e.cursor for e in history.recent(HOME, after=1)] == [3, 5]
    assert [e.cursor for e in history.recent(GROUP)] == [2, 4]
    assert history.recent("telegram:42") == []


def test_the_dream_cursor_starts_at_zero_and_keeps_what_was_set(history: HistoryLog) -> None:
    assert history.dream_cursor() == 0
    fill(history, HOME, HOME)
    history.set_dream_cursor(2)
    assert history.dream_cursor() == 2
    assert history.entries(after=history.dream_cursor()) == []


def test_naive_timestamps_are_a_programming_error(history: HistoryLog) -> None:
    with pytest.raises(ValueError, match="aware"):
        history.append(HOME, "x", now=datetime(2026, 11, 30, 9, 0))
    assert history.entries() == []
