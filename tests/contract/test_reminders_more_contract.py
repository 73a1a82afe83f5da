"""The reminders contract, on every backend: scopes, cancel, claims of one-shot and
recurring reminders, and what is due when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lore.errors import InvalidInputError, NotFoundError
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"


@pytest.fixture
def store(backend: Backend) -> Any:
    return backend.reminders


def add(store: Any, text: str = "take out the trash", *, scope: str = HOME,
        minutes: float = 10, recurrence: str | None = None) -> int:  # fmt: skip
    reminder = store.add(
        scope, "john", text, NOW + timedelta(minutes=minutes), timezone="Asia/Taipei",
        now=NOW, recurrence=recurrence, channel="cli",
    )  # fmt: skip
    return int(reminder.id)


def test_a_reminder_keeps_scope_author_text_due_time_and_zone(store: Any) -> None:
    reminder = store.get(HOME, add(store, "给妈妈打电话 позвонить маме", minutes=10.5))
    assert (reminder.scope, reminder.author, reminder.text) == (
        HOME,
        "john",
        "给妈妈打电话 позвонить маме",
    )
    # Whole seconds, rounded up: a reminder never fires before the time asked for.
    assert reminder.due_at == NOW + timedelta(minutes=10, seconds=30)
    assert (reminder.timezone, reminder.status, reminder.channel) == (
        "Asia/Taipei",
        "pending",
        "cli",
    )
    assert reminder.local_due.utcoffset() == timedelta(hours=8)
    assert (reminder.delivered_at, reminder.delivery_count) == (None, 0)


def test_a_conversation_lists_only_its_own_pending_reminders_soonest_first(store: Any) -> None:
    later, sooner = add(store, minutes=30), add(store, minutes=5)
    add(store, scope="telegram:42")
    cancelled = add(store, minutes=1)
    store.cancel(HOME, cancelled, by="john", now=NOW)
    assert [r.id for r in store.list(HOME)] == [sooner, later]
    assert [r.id for r in store.list(HOME, include_done=True)] == [sooner, later, cancelled]


def test_cancel_from_another_scope_is_not_found_and_changes_nothing(store: Any) -> None:
    reminder_id = add(store)
    with pytest.raises(NotFoundError):
        store.cancel("telegram:42", reminder_id, by="eve", now=NOW)
    assert store.get(HOME, reminder_id).status == "pending"


def test_cancel_marks_the_reminder_and_a_second_cancel_is_refused(store: Any) -> None:
    reminder_id = add(store)
    assert store.cancel(HOME, reminder_id, by="john", now=NOW).status == "cancelled"
    with pytest.raises(InvalidInputError, match="already cancelled"):
        store.cancel(HOME, reminder_id, by="john", now=NOW)
    assert store.claim_due(NOW + timedelta(hours=1)) == []


@pytest.mark.parametrize("unknown", [999, 0, -1, 2**63, 10**30])
def test_unknown_and_huge_ids_are_not_found(store: Any, unknown: int) -> None:
    with pytest.raises(NotFoundError):
        store.get(HOME, unknown)
    with pytest.raises(NotFoundError):
        store.cancel(HOME, unknown, by="john", now=NOW)


@pytest.mark.parametrize(
    ("text", "problem"), [("   ", "needs some text"), ("x" * 1001, "the limit is 1000")]
)
def test_empty_or_oversized_text_is_refused_and_nothing_stored(
    store: Any, text: str, problem: str
) -> None:
    with pytest.raises(InvalidInputError, match=problem):
        add(store, text)
    assert store.list(HOME) == []


def test_an_unknown_timezone_is_refused(store: Any) -> None:
    with pytest.raises(InvalidInputError, match="unknown timezone"):
        store.add(HOME, "john", "x", NOW, timezone="Mars/Olympus", now=NOW)
    assert store.list(HOME) == []


def test_a_recurrence_is_stored_in_canonical_form(store: Any) -> None:
    assert store.get(HOME, add(store, recurrence="Every 15 Minutes")).recurrence == "every 15m"


def test_next_due_time_is_the_soonest_pending_reminder(store: Any) -> None:
    assert store.next_due_time() is None
    add(store, minutes=30)
    soonest = add(store, minutes=3)
    add(store, minutes=1, scope="telegram:42")
    assert store.next_due_time() == NOW + timedelta(minutes=1)
    assert store.next_due_time(HOME) == NOW + timedelta(minutes=3)
    store.cancel(HOME, soonest, by="john", now=NOW)
    assert store.next_due_time(HOME) == NOW + timedelta(minutes=30)


def test_claiming_a_one_shot_marks_it_delivered_once(store: Any) -> None:
    reminder_id = add(store, minutes=10)
    assert store.claim_due(NOW + timedelta(minutes=9)) == []
    fire = NOW + timedelta(minutes=10)
    assert [r.id for r in store.due(fire)] == [reminder_id]
    [due] = store.claim_due(fire)
    assert (due.id, due.late, due.next_due, due.text) == (reminder_id, False, None, due.text)
    assert store.claim_due(fire) == []
    assert store.due(fire) == []
    stored = store.get(HOME, reminder_id)
    assert (stored.status, stored.delivered_at, stored.delivery_count) == ("delivered", fire, 1)


def test_a_claim_well_after_the_due_time_is_late(store: Any) -> None:
    add(store, minutes=10)
    [due] = store.claim_due(NOW + timedelta(minutes=15))
    assert due.late


def test_claiming_a_recurring_reminder_moves_it_to_its_next_occurrence(store: Any) -> None:
    reminder_id = add(store, minutes=0, recurrence="every 15m")
    [due] = store.claim_due(NOW + timedelta(seconds=20))
    assert due.next_due == NOW + timedelta(minutes=15)
    stored = store.get(HOME, reminder_id)
    assert (stored.status, stored.due_at, stored.delivery_count) == (
        "pending",
        NOW + timedelta(minutes=15),
        1,
    )


def test_claims_are_limited_oldest_first_and_of_one_scope_when_asked(store: Any) -> None:
    ids = [add(store, minutes=m) for m in (3, 1, 2)]
    theirs = add(store, minutes=0, scope="telegram:42")
    assert [d.id for d in store.claim_due(NOW + timedelta(minutes=5), scope=HOME, limit=2)] == [
        ids[1],
        ids[2],
    ]
    assert [d.id for d in store.claim_due(NOW + timedelta(minutes=5))] == [theirs, ids[0]]


def test_an_added_reminder_tells_the_listeners(store: Any) -> None:
    heard: list[str] = []
    store.on_added(lambda: heard.append("added"))
    add(store)
    assert heard == ["added"]
