"""Claims as a property, for every backend: however late and however often schedulers
look, each occurrence of a reminder enters the outbox exactly once, a recurring one is
always moved past the moment it was claimed, and one-shots are claimed once."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lore.ports.reminders import occurrence_key
from tests.contract.conftest import FACTORIES, backend_params

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCHEDULES = [None, "every 15m", "every day at 9am", "every monday at 8:30"]

steps = st.lists(st.integers(min_value=0, max_value=3 * 86_400), min_size=1, max_size=12)


@pytest.mark.parametrize("name", backend_params())
def test_each_occurrence_enters_the_outbox_once_whenever_claims_run(name: str) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(gaps=steps, offsets=st.lists(st.integers(0, 7200), min_size=4, max_size=4))
    def check(gaps: list[int], offsets: list[int]) -> None:
        with tempfile.TemporaryDirectory() as directory, FACTORIES[name](Path(directory)) as b:
            ids = [
                b.reminders.add(
                    "cli:default",
                    "john",
                    f"напоминание {n} 提醒",
                    START + timedelta(seconds=o),
                    timezone="Asia/Taipei",
                    now=START,
                    recurrence=schedule,
                ).id
                for n, (schedule, o) in enumerate(zip(SCHEDULES, offsets, strict=True))
            ]
            now = START
            claimed: list[str] = []
            for gap in gaps:
                now += timedelta(seconds=gap)
                for due in b.reminders.claim_due(now):
                    assert due.reminder.due_at <= now
                    assert due.next_due is None or due.next_due > now
                    claimed.append(occurrence_key(due.id, due.reminder.due_at))
                for reminder_id in ids:
                    stored = b.reminders.get("cli:default", reminder_id)
                    assert stored.status == "delivered" or stored.due_at > now
            keys = [item.key for item in b.outbox.items("cli:default", limit=1000)]
            assert len(claimed) == len(set(claimed)) == len(keys)
            assert set(keys) == set(claimed)
            one_shot = b.reminders.get("cli:default", ids[0])
            assert one_shot.delivery_count == (1 if one_shot.status == "delivered" else 0)

    check()
