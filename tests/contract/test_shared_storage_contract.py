"""Several processes on one storage: what one commits, a store opened again on the same
storage sees; claims, leases and presence hold across them. (`backend.reopen()` opens
every store again, as another process would.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from lore.llm.base import Message
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
MESSAGES: list[Message] = [
    {"role": "user", "content": "我下周去花莲", "author": "john"},
    {"role": "assistant", "content": "Хорошей поездки!"},
]


def test_memories_written_by_one_process_are_read_by_another(backend: Backend) -> None:
    first = backend.memories
    kept, _ = first.remember(HOME, "我每天早上喝美式咖啡", author="john", via="tool", now=NOW)
    gone, _ = first.remember(HOME, "Zanzibarquux код 4417", author="john", via="tool", now=NOW)
    newer = first.supersede(HOME, kept.id, "Я пью чай", author="john", via="tool", now=NOW)
    first.forget(HOME, gone.id, by="john", via="cli", now=NOW)
    other = backend.reopen().memories
    assert [m.id for m in other.active(HOME, now=NOW)] == [newer.id]
    assert other.get(HOME, kept.id).superseded_by == newer.id
    assert other.search(HOME, "Zanzibarquux", now=NOW) == []
    assert other.history(HOME, newer.id) == first.history(HOME, newer.id)
    assert other.export(HOME) == first.export(HOME)


def test_two_schedulers_on_one_storage_claim_each_occurrence_once(backend: Backend) -> None:
    other = backend.reopen()
    for n in range(6):
        backend.reminders.add(HOME, "john", f"задача {n}", NOW, timezone="UTC", now=NOW)
    fire = NOW + timedelta(seconds=1)
    mine = backend.reminders.claim_due(fire, limit=4)
    theirs = other.reminders.claim_due(fire)
    assert len(mine) == 4 and len(theirs) == 2
    assert {d.id for d in mine}.isdisjoint({d.id for d in theirs})
    assert len(other.outbox.items(HOME)) == 6
    assert backend.reminders.next_due_time() is None and other.reminders.due(fire) == []


def test_a_process_killed_holding_a_lease_loses_nothing_and_delivers_nothing_twice(
    backend: Backend,
) -> None:
    backend.reminders.add(HOME, "john", "喝水", NOW, timezone="UTC", now=NOW)
    backend.reminders.claim_due(NOW)
    [held] = backend.outbox.lease(owner="doomed", now=NOW, seconds=60)
    # ... the process dies here; another starts on the same storage.
    restarted = backend.reopen().outbox
    assert restarted.lease(owner="heir", now=NOW + timedelta(seconds=30)) == []
    assert restarted.next_ready() == NOW + timedelta(seconds=60)
    [taken] = restarted.lease(owner="heir", now=NOW + timedelta(seconds=61))
    assert taken.id == held.id and taken.key == held.key
    assert restarted.done(taken.id, owner="heir", now=NOW + timedelta(seconds=62))
    assert not backend.outbox.done(held.id, owner="doomed", now=NOW + timedelta(seconds=63))
    assert [i.status for i in backend.outbox.items(HOME)] == ["delivered"]


def test_a_session_written_by_one_process_is_read_closed_and_recovered_by_another(
    backend: Backend,
) -> None:
    session = backend.sessions.live(HOME)
    session.append(MESSAGES)
    other = backend.reopen().sessions
    assert other.live(HOME).messages == MESSAGES
    assert other.live_keys() == [HOME]
    assert other.live(HOME).append_once("reminder:1:1", MESSAGES[1:])
    assert not session.append_once("reminder:1:1", MESSAGES[1:])
    entry = other.close(
        other.live(HOME), reason="new", ended_at=NOW, zone=ZoneInfo("Asia/Taipei"), slug="trip"
    )
    assert entry is not None and entry.message_count == 3
    assert backend.sessions.archive.entries() == [entry]
    session.refresh()
    assert session.messages == [] and session.meta.session_id != entry.session_id


def test_a_key_attached_by_one_process_is_seen_attached_by_another(backend: Backend) -> None:
    other = backend.reopen().sessions
    with backend.sessions.attach(HOME) as mine:
        assert mine and other.attached(HOME)
        with other.attach(HOME) as theirs:
            assert not theirs
    assert not other.attached(HOME)


def test_history_appended_by_one_process_continues_in_another(backend: Backend) -> None:
    backend.history.append(HOME, "John is going to 花莲", now=NOW)
    other = backend.reopen().history
    assert other.append(HOME, "Он купил билеты", now=NOW).cursor == 2
    other.set_dream_cursor(1)
    assert [e.cursor for e in backend.history.entries()] == [1, 2]
    assert backend.history.dream_cursor() == 1
