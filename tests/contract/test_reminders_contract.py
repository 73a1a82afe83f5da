"""What every ReminderStore does: scopes, cancel marks, claims that move each occurrence
into the outbox once, recurrence, and the times a scheduler sleeps until."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lore.errors import InvalidInputError, NotFoundError
from lore.ports.outbox import payload_to_json
from lore.ports.reminders import ReminderStore, occurrence_key
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "line:group:family"


@pytest.fixture
def store(backend: Backend) -> ReminderStore:
    return backend.reminders


def add(
    store: ReminderStore,
    text: str = "take out the trash",
    *,
    scope: str = HOME,
    minutes: float = 10,
    recurrence: str | None = None,
) -> int:
    due = NOW + timedelta(minutes=minutes)
    reminder = store.add(
        scope,
        "john",
        text,
        due,
        timezone="Asia/Taipei",
        now=NOW,
        recurrence=recurrence,
        channel="cli",
        session_id="s-1",
    )
    return reminder.id


def test_a_reminder_keeps_what_it_was_given(store: ReminderStore) -> None:
    reminder = store.get(HOME, add(store, "提醒我给妈妈打电话"))
    assert (reminder.scope, reminder.author, reminder.text) == (HOME, "john", "提醒我给妈妈打电话")
    assert (reminder.channel, reminder.session_id, reminder.timezone) == (
        "cli",
        "s-1",
        "Asia/Taipei",
    )
    assert reminder.due_at == reminder.anchor_at == NOW + timedelta(minutes=10)
    assert reminder.local_due.isoformat() == "2026-11-30T17:10:00+08:00"
    assert (reminder.status, reminder.recurrence, reminder.delivered_at) == ("pending", None, None)
    assert (reminder.created_at, reminder.delivery_count) == (NOW, 0)


def test_text_is_kept_on_one_line(store: ReminderStore) -> None:
    reminder = store.get(HOME, add(store, "  купить\nбилеты \t в пятницу "))
    assert reminder.text == "купить билеты в пятницу"


def test_times_are_kept_to_the_second_and_a_due_time_rounds_up(store: ReminderStore) -> None:
    reminder = store.add(
        HOME,
        "john",
        "x",
        NOW + timedelta(milliseconds=300),
        timezone="UTC",
        now=NOW + timedelta(milliseconds=700),
    )
    assert reminder.due_at == NOW + timedelta(seconds=1)
    assert reminder.created_at == NOW


@pytest.mark.parametrize(("text", "reason"), [("   ", "needs some text"), ("x" * 1001, "limit")])
def test_empty_or_oversized_text_is_refused_and_nothing_stored(
    store: ReminderStore, text: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        add(store, text)
    assert store.list(HOME, include_done=True) == []


def test_an_unknown_timezone_or_a_recurrence_that_never_fires_is_refused(
    store: ReminderStore,
) -> None:
    with pytest.raises(InvalidInputError, match="timezone"):
        store.add(HOME, "john", "x", NOW, timezone="Mars/Olympus", now=NOW)
    with pytest.raises(InvalidInputError):
        add(store, recurrence="every blue moon")
    assert store.list(HOME, include_done=True) == []


def test_naive_times_are_a_programming_error(store: ReminderStore) -> None:
    with pytest.raises(ValueError, match="aware"):
        store.add(HOME, "john", "x", datetime(2026, 12, 1), timezone="UTC", now=NOW)


def test_a_recurrence_is_stored_in_canonical_form(store: ReminderStore) -> None:
    assert store.get(HOME, add(store, recurrence="every day at 9am")).recurrence == "daily 09:00"
    assert store.get(HOME, add(store, recurrence="Every 15 Minutes")).recurrence == "every 15m"


def test_a_conversation_lists_only_its_own_reminders_pending_soonest_first(
    store: ReminderStore,
) -> None:
    later = add(store, "later", minutes=60)
    sooner = add(store, "sooner", minutes=5)
    done = add(store, "done", minutes=1)
    add(store, "elsewhere", scope=GROUP)
    store.cancel(HOME, done, by="john", now=NOW)
    assert [r.id for r in store.list(HOME)] == [sooner, later]
    assert [r.id for r in store.list(HOME, include_done=True)] == [sooner, later, done]
    assert [r.id for r in store.list(HOME, limit=1)] == [sooner]
    assert [r.text for r in store.list(GROUP)] == ["elsewhere"]


def test_another_scopes_reminder_is_not_found_and_left_alone(store: ReminderStore) -> None:
    reminder_id = add(store, scope=GROUP)
    with pytest.raises(NotFoundError, match=f"#{reminder_id}"):
        store.get(HOME, reminder_id)
    with pytest.raises(NotFoundError, match=f"#{reminder_id}"):
        store.cancel(HOME, reminder_id, by="mallory", now=NOW)
    assert store.get(GROUP, reminder_id).status == "pending"
    for unknown in (999, 0, -1, 2**63, 10**30, -(10**30)):
        with pytest.raises(NotFoundError, match=f"no reminder #{unknown}"):
            store.get(HOME, unknown)
        with pytest.raises(NotFoundError, match=f"no reminder #{unknown}"):
            store.cancel(HOME, unknown, by="john", now=NOW)


def test_cancel_marks_the_reminder_and_a_second_cancel_is_refused(store: ReminderStore) -> None:
    reminder_id = add(store)
    assert store.cancel(HOME, reminder_id, by="john", now=NOW).status == "cancelled"
    assert store.get(HOME, reminder_id).status == "cancelled"
    with pytest.raises(InvalidInputError, match="already cancelled"):
        store.cancel(HOME, reminder_id, by="john", now=NOW)
    assert store.claim_due(NOW + timedelta(hours=1)) == []
    assert store.next_due_time() is None


def test_a_delivered_one_shot_cannot_be_cancelled(store: ReminderStore) -> None:
    reminder_id = add(store)
    store.claim_due(NOW + timedelta(minutes=10))
    with pytest.raises(InvalidInputError, match="already delivered"):
        store.cancel(HOME, reminder_id, by="john", now=NOW)


def test_listeners_hear_of_each_add(store: ReminderStore) -> None:
    heard: list[int] = []
    store.on_added(lambda: heard.append(1))
    add(store)
    add(store, scope=GROUP)
    assert len(heard) == 2


def test_next_due_time_is_the_soonest_pending_reminder_of_any_or_one_scope(
    store: ReminderStore,
) -> None:
    assert store.next_due_time() is None and store.next_due_time(HOME) is None
    add(store, minutes=30)
    soonest = add(store, minutes=3, scope=GROUP)
    assert store.next_due_time() == NOW + timedelta(minutes=3)
    assert store.next_due_time(HOME) == NOW + timedelta(minutes=30)
    store.cancel(GROUP, soonest, by="john", now=NOW)
    assert store.next_due_time() == NOW + timedelta(minutes=30)
    assert store.next_due_time(GROUP) is None


def test_due_shows_what_a_claim_would_take_without_taking_it(store: ReminderStore) -> None:
    first = add(store, minutes=2)
    second = add(store, minutes=1)
    add(store, minutes=30)
    assert [r.id for r in store.due(NOW + timedelta(minutes=5))] == [second, first]
    assert [r.id for r in store.due(NOW + timedelta(minutes=5), limit=1)] == [second]
    assert len(store.claim_due(NOW + timedelta(minutes=5))) == 2


def test_claiming_a_one_shot_marks_it_delivered_once(store: ReminderStore) -> None:
    reminder_id = add(store, minutes=10)
    assert store.claim_due(NOW + timedelta(minutes=9)) == []
    fire = NOW + timedelta(minutes=10)
    [due] = store.claim_due(fire)
    assert (due.id, due.scope, due.author, due.text) == (
        reminder_id,
        HOME,
        "john",
        "take out the trash",
    )
    assert (due.late, due.next_due, due.claimed_at) == (False, None, fire)
    assert due.reminder.due_at == fire and due.reminder.status == "pending"  # as it was
    assert store.claim_due(fire) == [] and store.due(fire) == []
    stored = store.get(HOME, reminder_id)
    assert (stored.status, stored.delivered_at, stored.delivery_count) == ("delivered", fire, 1)
    assert store.list(HOME) == []


def test_a_claim_well_after_the_due_time_is_late(store: ReminderStore) -> None:
    add(store, minutes=10)
    add(store, minutes=20)
    claimed = store.claim_due(NOW + timedelta(minutes=21))  # 11 and 1 minutes past due
    assert [d.late for d in claimed] == [True, False]


def test_claiming_a_recurring_reminder_moves_it_to_its_next_occurrence(
    store: ReminderStore,
) -> None:
    reminder_id = add(store, minutes=0, recurrence="every 15m")
    [due] = store.claim_due(NOW + timedelta(seconds=20))
    assert due.next_due == NOW + timedelta(minutes=15)
    stored = store.get(HOME, reminder_id)
    assert (stored.status, stored.due_at, stored.anchor_at) == (
        "pending",
        NOW + timedelta(minutes=15),
        NOW,
    )
    assert stored.delivery_count == 1
    # Missed many times: one late occurrence now, then back on its grid.
    [missed] = store.claim_due(NOW + timedelta(hours=2, minutes=7))
    assert missed.late and missed.next_due == NOW + timedelta(hours=2, minutes=15)


def test_claims_are_limited_oldest_first_and_can_keep_to_one_scope(store: ReminderStore) -> None:
    ids = [add(store, minutes=m) for m in (3, 1, 2)]
    theirs = add(store, minutes=0, scope=GROUP)
    mine = store.claim_due(NOW + timedelta(minutes=5), limit=2, scope=HOME)
    assert [d.id for d in mine] == [ids[1], ids[2]]
    assert store.get(GROUP, theirs).status == "pending"
    assert [d.id for d in store.claim_due(NOW + timedelta(minutes=5))] == [theirs, ids[0]]


def test_a_claim_moves_each_occurrence_into_the_outbox_once(store: ReminderStore) -> None:
    reminder_id = add(store, recurrence="every 1h")
    fire = NOW + timedelta(minutes=10)
    store.claim_due(fire)
    store.claim_due(fire)  # nothing due any more: nothing added
    [item] = store.outbox.items(HOME)
    assert item.key == occurrence_key(reminder_id, fire)
    assert (item.scope, item.channel, item.kind, item.status) == (
        HOME,
        "cli",
        "reminder",
        "pending",
    )
    assert payload_to_json(item.payload) == {
        "reminder_id": reminder_id,
        "text": "take out the trash",
        "author": "john",
        "due_at": fire.isoformat(),
        "timezone": "Asia/Taipei",
        "late": False,
        "recurrence": "every 1h",
        "next_due": (fire + timedelta(hours=1)).isoformat(),
    }
    store.claim_due(fire + timedelta(hours=1))
    assert [i.key for i in store.outbox.items(HOME)] == [
        occurrence_key(reminder_id, fire + timedelta(hours=1)),
        occurrence_key(reminder_id, fire),
    ]


def test_a_cancel_after_the_claim_does_not_take_back_what_is_in_the_outbox(
    store: ReminderStore,
) -> None:
    reminder_id = add(store, recurrence="every 1h")
    store.claim_due(NOW + timedelta(minutes=10))
    store.cancel(HOME, reminder_id, by="john", now=NOW + timedelta(minutes=10))
    assert store.get(HOME, reminder_id).status == "cancelled"
    assert [i.status for i in store.outbox.items(HOME)] == ["pending"]
    assert store.claim_due(NOW + timedelta(hours=3)) == []
