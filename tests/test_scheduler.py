"""The scheduler, driven by an explicit clock: it never sleeps in these tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from lore.backends.local.database import Database
from lore.backends.local.reminders import SQLiteReminderStore
from lore.backends.local.sessions import LocalSessions
from lore.clock import FixedClock
from lore.events import Event, ReminderDue
from lore.ports.reminders import ReminderStore
from lore.reminders import create_reminder
from lore.reminders.delivery import Delivery, format_reminder, session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # 17:00 in Taipei
TAIPEI = ZoneInfo("Asia/Taipei")
NEW_YORK = ZoneInfo("America/New_York")


class Inbox:
    """A delivery target that records what it was given (a boundary fake, not a mock)."""

    def __init__(self) -> None:
        self.received: list[Delivery] = []
        self.fail_next = 0
        self.arrived = asyncio.Event()

    async def __call__(self, due: Delivery) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise OSError("channel unavailable")
        self.received.append(due)
        self.arrived.set()

    @property
    def ids(self) -> list[int]:
        return [d.id for d in self.received]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "lore.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[ReminderStore]:
    db = Database(db_path)
    yield SQLiteReminderStore(db)
    db.close()


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


@pytest.fixture
def scheduler(store: ReminderStore, inbox: Inbox) -> Scheduler:
    return Scheduler(store, FixedClock(NOW), inbox)


def remind(store: ReminderStore, when: str, *, recurrence: str | None = None,
           now: datetime = NOW, zone: ZoneInfo = TAIPEI, text: str = "stretch") -> int:  # fmt: skip
    reminder = create_reminder(
        store, scope="line:group:family", author="john", text=text, when=when,
        recurrence=recurrence, now=now, zone=zone, channel="line",
    )  # fmt: skip
    return reminder.id


# -- on time, late, once ----------------------------------------------------------------


async def test_a_reminder_is_delivered_when_due_and_only_once(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    reminder_id = remind(store, "in 10 minutes")
    assert await scheduler.run_once(NOW + timedelta(minutes=9, seconds=59)) == []
    delivered = await scheduler.run_once(NOW + timedelta(minutes=10))
    assert [d.id for d in delivered] == inbox.ids == [reminder_id]
    assert not inbox.received[0].late
    assert "(late)" not in format_reminder(inbox.received[0])
    assert await scheduler.run_once(NOW + timedelta(minutes=11)) == []


async def test_a_reminder_that_fell_due_while_down_is_delivered_late_with_a_tag(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    remind(store, "in 10 minutes", text="call mom")
    await scheduler.run_once(NOW + timedelta(hours=3))
    [due] = inbox.received
    assert due.late
    assert format_reminder(due) == (
        "Reminder for @john: call mom (late) — was due Mon 2026-11-30 17:10 (Asia/Taipei)"
    )


async def test_nothing_is_delivered_after_cancel(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    one_shot = remind(store, "in 10 minutes")
    repeating = remind(store, "in 5 minutes", recurrence="every 15m")
    await scheduler.run_once(NOW + timedelta(minutes=5))
    assert inbox.ids == [repeating]
    for reminder_id in (one_shot, repeating):
        store.cancel("line:group:family", reminder_id, by="john", now=NOW)
    await scheduler.run_once(NOW + timedelta(days=2))
    assert inbox.ids == [repeating]


# -- recurring: no drift, missed runs, DST -------------------------------------------------


async def test_a_recurring_reminder_does_not_drift_when_delivered_late(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    reminder_id = remind(store, "tomorrow 9am", recurrence="daily")
    first = datetime(2026, 12, 1, 9, 0, tzinfo=TAIPEI)
    for day in range(3):
        # Each run happens 40 s after the due time; the schedule stays on 09:00.
        await scheduler.run_once(first + timedelta(days=day, seconds=40))
    fired = [d.due_at.astimezone(TAIPEI).strftime("%m-%d %H:%M:%S") for d in inbox.received]
    assert fired == ["12-01 09:00:00", "12-02 09:00:00", "12-03 09:00:00"]
    assert store.get("line:group:family", reminder_id).local_due == first + timedelta(days=3)


async def test_an_interval_reminder_stays_on_its_grid(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    remind(store, "in 15 minutes", recurrence="every 15m")
    await scheduler.run_once(NOW + timedelta(minutes=17))
    [due] = inbox.received
    assert due.next_due == NOW + timedelta(minutes=30)


async def test_a_recurring_reminder_missed_many_times_fires_once_late_and_is_rescheduled(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    reminder_id = remind(store, "in 1 hour", recurrence="every 1h")
    back_up = NOW + timedelta(hours=6, minutes=10)  # five runs missed while down
    delivered = await scheduler.run_once(back_up)
    assert [d.id for d in delivered] == [reminder_id]
    assert delivered[0].late
    assert delivered[0].next_due == NOW + timedelta(hours=7)
    assert await scheduler.run_once(back_up) == []


async def test_spring_forward_fires_a_skipped_time_at_the_end_of_the_gap(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    saturday = datetime(2026, 3, 7, 12, 0, tzinfo=NEW_YORK)
    remind(store, "tomorrow 2:30am", recurrence="daily 02:30", now=saturday, zone=NEW_YORK)
    for moment in ("2026-03-08T03:00-04:00", "2026-03-09T02:30-04:00"):
        await scheduler.run_once(datetime.fromisoformat(moment))
    local = [d.due_at.astimezone(NEW_YORK).isoformat() for d in inbox.received]
    assert local == ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]
    assert not any(d.late for d in inbox.received)


async def test_fall_back_fires_a_repeated_time_once(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    saturday = datetime(2026, 10, 31, 12, 0, tzinfo=NEW_YORK)
    reminder_id = remind(
        store, "tomorrow 1:30am", recurrence="daily 01:30", now=saturday, zone=NEW_YORK
    )
    first = datetime.fromisoformat("2026-11-01T01:30-04:00")
    await scheduler.run_once(first)
    await scheduler.run_once(first + timedelta(hours=1))  # 01:30 again, now EST
    assert len(inbox.received) == 1
    next_due = store.get("line:group:family", reminder_id).due_at.astimezone(NEW_YORK)
    assert next_due.isoformat() == "2026-11-02T01:30:00-05:00"


# -- exactly once, restarts, failures --------------------------------------------------------


def test_two_schedulers_on_one_database_deliver_each_reminder_exactly_once(
    db_path: Path, store: ReminderStore
) -> None:
    ids = {remind(store, f"in {m} minutes", text=f"r{m}") for m in range(1, 61)}
    barrier = threading.Barrier(2)
    delivered: list[list[int]] = [[], []]

    def run(slot: int) -> None:
        db = Database(db_path)  # a second, real connection to the same file
        inbox = Inbox()
        scheduler = Scheduler(SQLiteReminderStore(db), FixedClock(NOW), inbox, batch=5)
        barrier.wait()
        asyncio.run(scheduler.run_once(NOW + timedelta(hours=2)))
        delivered[slot] = inbox.ids
        db.close()

    threads = [threading.Thread(target=run, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = delivered[0] + delivered[1]
    assert sorted(everything) == sorted(ids)  # all delivered, none twice


async def test_a_second_scheduler_finds_nothing_left_to_claim(
    db_path: Path, store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    remind(store, "in 10 minutes")
    other_db = Database(db_path)
    other_inbox = Inbox()
    other = Scheduler(SQLiteReminderStore(other_db), FixedClock(NOW), other_inbox)
    due = NOW + timedelta(minutes=10)
    await scheduler.run_once(due)
    await other.run_once(due)
    other_db.close()
    assert len(inbox.received) == 1
    assert other_inbox.received == []


async def test_state_survives_a_restart(db_path: Path) -> None:
    db = Database(db_path)
    reminder_id = remind(SQLiteReminderStore(db), "in 10 minutes")
    db.close()  # the process stops before the reminder is due

    restarted = Database(db_path)
    inbox = Inbox()
    later = NOW + timedelta(hours=1)
    await Scheduler(SQLiteReminderStore(restarted), FixedClock(later), inbox).run_once()
    restarted.close()
    assert inbox.ids == [reminder_id]
    assert inbox.received[0].late


async def test_a_failed_delivery_is_retried_on_the_next_run(
    store: ReminderStore, scheduler: Scheduler, inbox: Inbox
) -> None:
    reminder_id = remind(store, "in 10 minutes")
    inbox.fail_next = 1
    due = NOW + timedelta(minutes=10)
    assert await scheduler.run_once(due) == []
    assert scheduler.seconds_until_next(due) == scheduler.max_sleep  # back off, don't spin
    assert [d.id for d in await scheduler.run_once(due + timedelta(minutes=1))] == [reminder_id]


async def test_a_stop_mid_batch_leaves_every_undelivered_reminder_for_the_next_run(
    store: ReminderStore, inbox: Inbox
) -> None:
    first, second, third = (remind(store, f"in {n} minutes", text=f"r{n}") for n in (1, 2, 3))

    async def stopped_on_the_second(due: Delivery) -> None:
        if due.id == second:
            raise asyncio.CancelledError
        await inbox(due)

    due = NOW + timedelta(minutes=5)
    with pytest.raises(asyncio.CancelledError):
        await Scheduler(store, FixedClock(NOW), stopped_on_the_second).run_once(due)
    await Scheduler(store, FixedClock(NOW), inbox).run_once(due)

    assert inbox.ids == [first, second, third]


# -- sleeping and waking -------------------------------------------------------------------


def test_the_scheduler_sleeps_until_the_next_due_time_but_at_most_a_minute(
    store: ReminderStore, scheduler: Scheduler
) -> None:
    assert scheduler.seconds_until_next(NOW) == 60
    remind(store, "in 2 hours")
    assert scheduler.seconds_until_next(NOW) == 60
    remind(store, "in 1 minute")
    assert scheduler.seconds_until_next(NOW + timedelta(seconds=20)) == pytest.approx(40, abs=0.1)
    assert scheduler.seconds_until_next(NOW + timedelta(minutes=5)) == 0


async def test_adding_a_reminder_wakes_a_sleeping_scheduler(
    store: ReminderStore, inbox: Inbox
) -> None:
    scheduler = Scheduler(store, FixedClock(NOW), inbox, max_sleep=3600)
    store.add("cli:default", "john", "first", NOW, timezone="UTC", now=NOW)
    task = asyncio.create_task(scheduler.run_forever())
    await asyncio.wait_for(inbox.arrived.wait(), timeout=5)
    # Delivered; the scheduler is now in an hour-long wait and the clock does not move.
    inbox.arrived.clear()
    store.add("cli:default", "john", "second", NOW, timezone="UTC", now=NOW)
    await asyncio.wait_for(inbox.arrived.wait(), timeout=5)
    scheduler.stop()
    await asyncio.wait_for(task, timeout=5)
    assert [d.text for d in inbox.received] == ["first", "second"]


# -- delivery into the conversation ------------------------------------------------------------


async def test_delivery_appends_to_the_session_and_emits_a_reminder_event(lore: Runtime) -> None:
    remind(lore.reminders, "in 10 minutes", text="take the pills")
    events: list[Event] = []
    deliver = session_delivery(lore.sessions, lambda scope: events.append)
    [due] = await Scheduler(lore.reminders, lore.clock, deliver).run_once(
        NOW + timedelta(minutes=30)
    )
    [message] = lore.session("line:group:family").messages
    assert message["role"] == "assistant"
    assert message["reminder_id"] == due.id and message["delivery"] == due.key
    assert events == [
        ReminderDue(
            scope="line:group:family",
            text=format_reminder(due),
            reminder_id=due.id,
            late=True,
            mention="@john",
        )
    ]
    assert "(late)" in message["content"] and "@john" in message["content"]


async def test_a_delivered_reminder_is_dated_when_it_was_delivered(lore: Runtime) -> None:
    """Not by the session's start: the transcript and search show when it arrived."""
    from lore.search import searcher

    scope = "line:group:family"
    lore.session(scope).append(
        [{"role": "user", "content": "早安", "timestamp": (NOW - timedelta(hours=3)).isoformat()}]
    )
    remind(lore.reminders, "in 10 minutes", text="吃药 / принять таблетки")
    deliver = session_delivery(lore.sessions, lambda scope: None)
    fired = NOW + timedelta(minutes=12)

    await Scheduler(lore.reminders, lore.clock, deliver).run_once(fired)

    message = lore.session(scope).messages[-1]
    assert message["timestamp"] == fired.isoformat(timespec="seconds")
    searcher(lore).index_live(scope)
    hits = searcher(lore).search("таблетки", scope, mode="text")
    assert [h.entry.at for h in hits if "таблетки" in h.entry.text] == [fired.timestamp()]


async def test_delivering_an_occurrence_again_never_adds_it_twice(lore: Runtime) -> None:
    """A process killed after writing the line but before marking it done: the next
    delivery finds the key in the session."""
    remind(lore.reminders, "in 10 minutes", text="take the pills")
    lore.reminders.claim_due(NOW + timedelta(minutes=10))
    [item] = lore.outbox.lease(owner="first", now=NOW + timedelta(minutes=10))
    deliver = session_delivery(lore.sessions, lambda scope: None)
    await deliver(
        Delivery(item, NOW + timedelta(minutes=10))
    )  # ... and the process dies before `done`
    later = NOW + timedelta(minutes=12)
    delivered = await Scheduler(lore.reminders, FixedClock(later), deliver).run_once(later)
    assert [d.key for d in delivered] == [item.key]
    assert len(lore.session("line:group:family").messages) == 1


async def test_the_scheduler_delivers_into_the_conversation_it_came_from(lore: Runtime) -> None:
    remind(lore.reminders, "in 10 minutes", text="water the plants")
    events: list[Event] = []
    deliver = session_delivery(lore.sessions, lambda scope: events.append)
    scheduler = Scheduler(lore.reminders, lore.clock, deliver)
    await scheduler.run_once(NOW + timedelta(minutes=10))
    [message] = lore.session("line:group:family").messages
    assert message["content"] == "⏰ Reminder for @john: water the plants"
    assert lore.session("cli:default").messages == []
    assert [type(e) for e in events] == [ReminderDue]


async def test_a_chat_scheduler_delivers_only_its_own_conversation(tmp_path: Path) -> None:
    db = Database(tmp_path / "lore.db")
    store = SQLiteReminderStore(db)
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    for scope in ("cli:default", "line:group:family"):
        store.add(
            scope,
            "john",
            f"for {scope}",
            clock.now() + timedelta(minutes=1),
            timezone="UTC",
            now=clock.now(),
        )
    delivered: list[str] = []

    async def deliver(due: Delivery) -> None:
        delivered.append(due.scope)

    chat = Scheduler(store, clock, deliver, scope="cli:default")
    clock.advance(minutes=2)
    await chat.run_once()
    assert delivered == ["cli:default"]
    assert store.next_due_time("cli:default") is None
    assert store.next_due_time() is not None  # the family's is left for `lore serve`


async def test_cancelling_the_scheduler_never_leaves_a_written_reminder_pending(
    tmp_path: Path,
) -> None:
    from lore.backends.local.live import LiveSession

    db = Database(tmp_path / "lore.db")
    store = SQLiteReminderStore(db)
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    for n in range(5):
        store.add(
            "cli:default",
            "john",
            f"task {n}",
            clock.now() + timedelta(minutes=1),
            timezone="UTC",
            now=clock.now(),
        )
    clock.advance(minutes=2)
    sessions = tmp_path / "sessions"
    deliver = session_delivery(LocalSessions(sessions, tmp_path), lambda scope: None)
    scheduler = Scheduler(store, clock, deliver)
    task = asyncio.create_task(scheduler.run_once())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    written = [m["reminder_id"] for m in LiveSession(sessions, "cli:default").messages]
    left = [
        item.reminder.reminder_id for item in store.outbox.items("cli:default", status="pending")
    ]
    done = [
        item.reminder.reminder_id for item in store.outbox.items("cli:default", status="delivered")
    ]
    # Every occurrence is written or still to deliver, never both, never lost.
    assert sorted(written) == sorted(done)
    assert sorted(written + left) == sorted(range(1, 6))
