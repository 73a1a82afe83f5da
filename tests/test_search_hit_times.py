"""A search hit's time says what is known: a daily note has a day but no time of day."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from lore.ports.search import Stored
from lore.search import format_hits
from lore.search.hybrid import Hit

TAIPEI = ZoneInfo("Asia/Taipei")


def _hit(kind: str, source: str, at: datetime) -> Hit:
    entry = Stored(1, "cli:default", kind, source, 3, at.timestamp(), "", "John fed the cats")
    return Hit(entry, 1.0, 1, None)


def test_a_daily_note_hit_shows_its_day_without_an_invented_time() -> None:
    hit = _hit("note", "memory/2026-11-29.md", datetime(2026, 11, 29, tzinfo=UTC))
    text = format_hits([hit], "cats", TAIPEI)
    assert text.startswith("[1] 2026-11-29 memory/2026-11-29.md:3: ")  # a day, no time


def test_a_closed_session_summary_keeps_its_time() -> None:
    hit = _hit("note", "memory/2026-11-29-1430-cats.md", datetime(2026, 11, 29, 6, 30, tzinfo=UTC))
    assert format_hits([hit], "cats", TAIPEI).startswith("[1] 2026-11-29 14:30 ")
