"""The reminders table: scopes, cancel, claims, and the index that finds what is due."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database, migrations
from lore.backends.local.reminders import SQLiteReminderStore
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.reminders import ReminderStore

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


@pytest.fixture
def store(db: Database) -> ReminderStore:
    return SQLiteReminderStore(db)


def add(store: ReminderStore, text: str = "take out the trash", *, scope: str = "cli:default",
        minutes: float = 10, recurrence: str | None = None) -> int:  # fmt: skip
    reminder = store.add(
        scope, "john", text, NOW + timedelta(minutes=minutes), timezone="Asia/Taipei",
        now=NOW, recurrence=recurrence, channel="cli",
    )  # fmt: skip
    return reminder.id


def test_a_reminder_keeps_scope_author_text_due_time_and_zone(store: ReminderStore) -> None:
    reminder_id = add(store)
    reminder = store.get("cli:default", reminder_id)
    assert (reminder.scope, reminder.author, reminder.text) == (
        "cli:default",
        "john",
        "take out the trash",
    )
    assert reminder.due_at == NOW + timedelta(minutes=10)
    assert reminder.local_due.isoformat() == "2026-11-30T17:10:00+08:00"
    assert (reminder.status, reminder.recurrence, reminder.delivered_at) == ("pending", None, None)


def test_a_conversation_lists_only_its_own_pending_reminders_soonest_first(
    store: ReminderStore,
) -> None:
    later = add(store, "later", minutes=60)
    sooner = add(store, "sooner", minutes=5)
    add(store, "elsewhere", scope="telegram:42")
    assert [r.id for r in store.list("cli:default")] == [sooner, later]
    assert [r.text for r in store.list("telegram:42")] == ["elsewhere"]


def test_cancel_from_another_scope_is_not_found_and_changes_nothing(store: ReminderStore) -> None:
    reminder_id = add(store, scope="line:group:family")
    with pytest.raises(NotFoundError, match=f"#{reminder_id}"):
        store.cancel("cli:default", reminder_id, by="mallory", now=NOW)
    assert store.get("line:group:family", reminder_id).status == "pending"


def test_cancel_marks_the_reminder_and_a_second_cancel_is_refused(store: ReminderStore) -> None:
    reminder_id = add(store)
    cancelled = store.cancel("cli:default", reminder_id, by="john", now=NOW)
    assert cancelled.status == "cancelled"
    assert store.list("cli:default") == []
    assert [r.status for r in store.list("cli:default", include_done=True)] == ["cancelled"]
    with pytest.raises(InvalidInputError, match="already cancelled"):
        store.cancel("cli:default", reminder_id, by="john", now=NOW)


def test_an_unknown_id_is_not_found(store: ReminderStore) -> None:
    with pytest.raises(NotFoundError):
        store.cancel("cli:default", 999, by="john", now=NOW)


def test_an_id_beyond_what_sqlite_can_hold_is_not_found(store: ReminderStore) -> None:
    for huge in (10**30, -(10**30)):
        with pytest.raises(NotFoundError, match=f"no reminder #{huge}"):
            store.cancel("cli:default", huge, by="john", now=NOW)


@pytest.mark.parametrize(("text", "reason"), [("   ", "needs some text"), ("x" * 1001, "limit")])
def test_empty_or_oversized_text_is_refused_and_nothing_stored(
    store: ReminderStore, text: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        add(store, text)
    assert store.list("cli:default", include_done=True) == []


def test_an_unknown_timezone_is_refused(store: ReminderStore) -> None:
    with pytest.raises(InvalidInputError, match="timezone"):
        store.add("cli:default", "john", "x", NOW, timezone="Mars/Olympus", now=NOW)


def test_a_recurrence_is_stored_in_canonical_form(store: ReminderStore) -> None:
    reminder_id = add(store, recurrence="every day at 9am")
    assert store.get("cli:default", reminder_id).recurrence == "daily 09:00"


def test_next_due_time_is_the_soonest_pending_reminder(store: ReminderStore) -> None:
    assert store.next_due_time() is None
    add(store, minutes=30)
    soonest = add(store, minutes=3)
    assert store.next_due_time() == NOW + timedelta(minutes=3)
    store.cancel("cli:default", soonest, by="john", now=NOW)
    assert store.next_due_time() == NOW + timedelta(minutes=30)


def test_claiming_a_one_shot_marks_it_delivered_once(store: ReminderStore) -> None:
    reminder_id = add(store, minutes=10)
    assert store.claim_due(NOW + timedelta(minutes=9)) == []
    fire = NOW + timedelta(minutes=10)
    [due] = store.claim_due(fire)
    assert (due.id, due.late, due.next_due) == (reminder_id, False, None)
    assert store.claim_due(fire) == []
    stored = store.get("cli:default", reminder_id)
    assert (stored.status, stored.delivered_at, stored.delivery_count) == ("delivered", fire, 1)


def test_a_claim_well_after_the_due_time_is_late(store: ReminderStore) -> None:
    add(store, minutes=10)
    [due] = store.claim_due(NOW + timedelta(minutes=15))
    assert due.late


def test_claiming_a_recurring_reminder_moves_it_to_its_next_occurrence(
    store: ReminderStore,
) -> None:
    reminder_id = add(store, minutes=0, recurrence="every 15m")
    [due] = store.claim_due(NOW + timedelta(seconds=20))
    assert due.next_due == NOW + timedelta(minutes=15)
    stored = store.get("cli:default", reminder_id)
    assert (stored.status, stored.due_at) == ("pending", NOW + timedelta(minutes=15))


def test_a_claim_moves_each_occurrence_into_the_outbox_once(store: ReminderStore) -> None:
    reminder_id = add(store, recurrence="every 1h")
    store.claim_due(NOW + timedelta(minutes=10))
    store.claim_due(NOW + timedelta(minutes=10))  # nothing due any more: nothing added
    [item] = store.outbox.items("cli:default")
    assert item.kind == "reminder" and item.reminder.reminder_id == reminder_id
    assert item.key == f"reminder:{reminder_id}:{int((NOW + timedelta(minutes=10)).timestamp())}"
    assert item.status == "pending"


def test_a_cancel_after_the_claim_does_not_take_back_what_is_in_the_outbox(
    store: ReminderStore,
) -> None:
    reminder_id = add(store, recurrence="every 1h")
    store.claim_due(NOW + timedelta(minutes=10))
    store.cancel("cli:default", reminder_id, by="john", now=NOW + timedelta(minutes=10))
    assert store.get("cli:default", reminder_id).status == "cancelled"
    assert [i.status for i in store.outbox.items("cli:default")] == ["pending"]


def test_claims_are_limited_and_oldest_first(store: ReminderStore) -> None:
    ids = [add(store, minutes=m) for m in (3, 1, 2)]
    claimed = store.claim_due(NOW + timedelta(minutes=5), limit=2)
    assert [d.id for d in claimed] == [ids[1], ids[2]]


def test_finding_due_reminders_uses_the_status_due_index(db: Database) -> None:
    plan = " ".join(
        row[3]
        for row in db.conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM reminders "
            "WHERE status = 'pending' AND due_at <= 0 ORDER BY due_at LIMIT 100"
        )
    )
    assert "INDEX reminders_due" in plan
    assert "TEMP B-TREE" not in plan


def test_a_database_from_before_reminders_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for number, _, module in migrations():  # the schema as it was before reminders
        if number < 2:
            module.apply(old) if hasattr(module, "apply") else old.executescript(module.SQL)
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    db = Database(path)
    try:
        assert db.schema_version >= 2
        store = SQLiteReminderStore(db)
        assert store.list("cli:default") == []
        add(store)
        assert len(store.list("cli:default")) == 1
    finally:
        db.close()
