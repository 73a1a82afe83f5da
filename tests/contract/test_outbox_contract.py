"""What every Outbox does: one item per idempotency key, ever; leases that run out and
are taken over; done only for the lease holder; release; retry with backoff, then failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from lore.ports.outbox import MAX_ATTEMPTS, Outbox, OutboxItem, ReminderPayload
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "line:group:family"


@pytest.fixture
def outbox(backend: Backend) -> Outbox:
    return backend.outbox


def item(key: str, scope: str = HOME, text: str = "喝水 / выпей воды") -> OutboxItem:
    return OutboxItem(
        id=0,
        key=key,
        scope=scope,
        channel="cli",
        kind="reminder",
        payload=ReminderPayload(7, text, "john", NOW, timezone="Asia/Taipei"),
        status="failed",  # put ignores it
        attempts=99,
        created_at=NOW - timedelta(days=9),
    )


def put(outbox: Outbox, key: str, scope: str = HOME, at: datetime = NOW) -> OutboxItem:
    assert outbox.put(item(key, scope), now=at)
    [stored] = [i for i in outbox.items(scope) if i.key == key]
    return stored


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def test_put_keeps_the_item_pending_and_ignores_its_id_status_and_attempts(
    outbox: Outbox,
) -> None:
    stored = put(outbox, "k1")
    assert (stored.key, stored.scope, stored.channel, stored.kind) == (
        "k1",
        HOME,
        "cli",
        "reminder",
    )
    assert stored.payload == ReminderPayload(7, "喝水 / выпей воды", "john", NOW, "Asia/Taipei")
    assert (stored.status, stored.attempts, stored.last_error) == ("pending", 0, "")
    assert stored.id > 0 and stored.created_at == NOW


def test_a_key_is_queued_once_ever_even_after_delivery(outbox: Outbox) -> None:
    stored = put(outbox, "reminder:1:100")
    assert not outbox.put(item("reminder:1:100"), now=NOW)
    [leased] = outbox.lease(owner="a", now=NOW)
    assert outbox.done(leased.id, owner="a", now=NOW)
    assert not outbox.put(item("reminder:1:100"), now=later(600))
    assert [(i.id, i.status) for i in outbox.items(HOME)] == [(stored.id, "delivered")]


def test_items_lists_a_scopes_items_newest_first_by_status(outbox: Outbox) -> None:
    first, second = put(outbox, "a"), put(outbox, "b")
    put(outbox, "c", scope=GROUP)
    assert [i.id for i in outbox.items(HOME)] == [second.id, first.id]
    assert [i.id for i in outbox.items(HOME, limit=1)] == [second.id]
    outbox.lease(owner="a", now=NOW, scopes=[HOME], limit=1)
    outbox.done(first.id, owner="a", now=NOW)
    assert [i.id for i in outbox.items(HOME, status="delivered")] == [first.id]
    assert [i.id for i in outbox.items(HOME, status="pending")] == [second.id]


def test_pending_counts_what_is_still_to_deliver_in_every_scope(outbox: Outbox) -> None:
    assert outbox.pending() == 0
    first, _ = put(outbox, "a"), put(outbox, "b")
    put(outbox, "c", scope=GROUP)
    assert outbox.pending() == 3
    outbox.lease(owner="a", now=NOW, scopes=[HOME], limit=1)
    assert outbox.pending() == 3  # leased is still to deliver
    outbox.done(first.id, owner="a", now=NOW)
    assert outbox.pending() == 2


def test_a_leased_item_is_not_leased_again_while_the_lease_runs(outbox: Outbox) -> None:
    stored = put(outbox, "k")
    assert [i.id for i in outbox.lease(owner="a", now=NOW, seconds=60)] == [stored.id]
    assert outbox.lease(owner="b", now=later(59)) == []
    assert outbox.lease(owner="a", now=later(59)) == []  # not even to its own holder
    assert outbox.ready_scopes(later(59)) == []


def test_a_lease_that_runs_out_is_taken_over_and_the_old_holder_cannot_finish(
    outbox: Outbox,
) -> None:
    stored = put(outbox, "k")
    outbox.lease(owner="doomed", now=NOW, seconds=60)
    assert [i.id for i in outbox.lease(owner="heir", now=later(61))] == [stored.id]
    assert not outbox.done(stored.id, owner="doomed", now=later(62))
    assert outbox.done(stored.id, owner="heir", now=later(62))
    assert not outbox.done(stored.id, owner="heir", now=later(63))  # once
    assert outbox.lease(owner="third", now=later(3600)) == []


def test_the_leases_of_an_ended_process_run_out_at_once_and_no_one_elses(
    outbox: Outbox,
) -> None:
    mine, theirs, done = put(outbox, "m"), put(outbox, "t", scope=GROUP), put(outbox, "d")
    outbox.lease(owner="ended", now=NOW, scopes=[HOME], seconds=60)
    outbox.lease(owner="alive", now=NOW, scopes=[GROUP], seconds=60)
    assert outbox.done(done.id, owner="ended", now=NOW)
    assert outbox.end_leases([]) == 0
    assert outbox.end_leases(["ended", "never-held-any"]) == 1  # the one still pending
    assert outbox.ready_scopes(later(1)) == [HOME]
    [taken] = outbox.lease(owner="heir", now=later(1))  # not the live process's item
    assert (taken.id, taken.attempts) == (mine.id, 0)
    assert outbox.done(mine.id, owner="heir", now=later(2))
    assert outbox.lease(owner="heir", now=later(2)) == []
    assert [i.id for i in outbox.lease(owner="heir", now=later(61))] == [theirs.id]


def test_lease_takes_ready_items_oldest_first_up_to_the_limit_of_the_given_scopes(
    outbox: Outbox,
) -> None:
    ids = [put(outbox, f"k{n}").id for n in range(3)]
    theirs = put(outbox, "g", scope=GROUP)
    assert [i.id for i in outbox.lease(owner="a", now=NOW, scopes=[HOME], limit=2)] == ids[:2]
    assert outbox.lease(owner="a", now=NOW, scopes=[]) == []
    assert [i.id for i in outbox.lease(owner="b", now=NOW)] == [ids[2], theirs.id]


def test_ready_scopes_are_those_with_an_item_to_lease_now(outbox: Outbox) -> None:
    assert outbox.ready_scopes(NOW) == []
    put(outbox, "a")
    put(outbox, "b", scope=GROUP)
    assert sorted(outbox.ready_scopes(NOW)) == sorted([HOME, GROUP])
    outbox.lease(owner="a", now=NOW, scopes=[GROUP])
    assert outbox.ready_scopes(NOW) == [HOME]


def test_release_gives_an_item_back_at_once_and_only_from_its_holder(outbox: Outbox) -> None:
    stored = put(outbox, "k")
    outbox.lease(owner="a", now=NOW)
    outbox.release(stored.id, owner="b")  # not b's to give back
    assert outbox.lease(owner="b", now=later(1)) == []
    outbox.release(stored.id, owner="a")
    [again] = outbox.lease(owner="b", now=later(1))
    assert (again.id, again.attempts) == (stored.id, 0)


def test_retry_counts_the_attempt_keeps_the_error_and_waits_the_delay(outbox: Outbox) -> None:
    stored = put(outbox, "k")
    outbox.lease(owner="a", now=NOW)
    outbox.retry(stored.id, owner="a", now=NOW, error="канал недоступен", delay=30)
    [kept] = outbox.items(HOME)
    assert (kept.status, kept.attempts, kept.last_error) == ("pending", 1, "канал недоступен")
    assert outbox.lease(owner="b", now=later(29)) == []
    assert outbox.next_ready() == later(30)
    assert [i.id for i in outbox.lease(owner="b", now=later(30))] == [stored.id]


def test_retry_from_a_lost_lease_changes_nothing(outbox: Outbox) -> None:
    stored = put(outbox, "k")
    outbox.lease(owner="a", now=NOW, seconds=10)
    outbox.lease(owner="b", now=later(11))
    outbox.retry(stored.id, owner="a", now=later(12), error="late", delay=300)
    [kept] = outbox.items(HOME)
    assert (kept.attempts, kept.last_error) == (0, "")
    assert outbox.done(stored.id, owner="b", now=later(12))


def test_after_max_attempts_the_item_is_failed_and_never_leased_again(outbox: Outbox) -> None:
    stored = put(outbox, "k")
    moment = NOW
    for _ in range(MAX_ATTEMPTS):
        [leased] = outbox.lease(owner="a", now=moment)
        outbox.retry(leased.id, owner="a", now=moment, error="down", delay=1)
        moment += timedelta(seconds=2)
    [failed] = outbox.items(HOME)
    assert (failed.id, failed.status, failed.attempts) == (stored.id, "failed", MAX_ATTEMPTS)
    assert outbox.lease(owner="a", now=moment + timedelta(days=1)) == []
    assert outbox.next_ready() is None and outbox.ready_scopes(moment) == []


def test_next_ready_is_the_soonest_pending_item_leases_included(outbox: Outbox) -> None:
    assert outbox.next_ready() is None
    first = put(outbox, "a")
    put(outbox, "b", scope=GROUP, at=later(20))
    assert outbox.next_ready() == NOW
    assert outbox.next_ready(GROUP) == later(20)
    outbox.lease(owner="a", now=NOW, scopes=[HOME], seconds=45)
    assert outbox.next_ready(HOME) == later(45)
    assert outbox.next_ready() == later(20)
    outbox.done(first.id, owner="a", now=later(1))
    assert outbox.next_ready(HOME) is None


def test_two_owners_asking_at_once_never_both_hold_an_item(outbox: Outbox) -> None:
    for n in range(10):
        put(outbox, f"k{n}")
    first = outbox.lease(owner="a", now=NOW, limit=6)
    second = outbox.lease(owner="b", now=NOW)
    assert len(first) == 6 and len(second) == 4
    assert {i.id for i in first}.isdisjoint({i.id for i in second})
    delivered = [i.id for i in first if outbox.done(i.id, owner="a", now=NOW)]
    delivered += [i.id for i in second if outbox.done(i.id, owner="b", now=NOW)]
    assert sorted(delivered) == sorted(i.id for i in outbox.items(HOME))


def test_every_time_the_outbox_is_given_must_be_aware(outbox: Outbox) -> None:
    naive = datetime(2026, 11, 30, 9, 0)
    stored = put(outbox, "k1")
    refused: list[Callable[[], object]] = [
        lambda: outbox.put(item("k2"), now=naive),
        lambda: outbox.lease(owner="a", now=naive),
        lambda: outbox.lease(owner="a", now=naive, scopes=[]),
        lambda: outbox.done(stored.id, owner="a", now=naive),
        lambda: outbox.retry(stored.id, owner="a", now=naive, error="x", delay=1),
        lambda: outbox.ready_scopes(naive),
    ]
    for call in refused:
        with pytest.raises(ValueError, match="outbox times must be aware"):
            call()
    assert [(i.key, i.status, i.attempts) for i in outbox.items(HOME)] == [("k1", "pending", 0)]
    assert [i.id for i in outbox.lease(owner="a", now=NOW)] == [stored.id]


def test_forget_everywhere_rewrites_every_matching_string_of_a_payload(
    outbox: Outbox,
) -> None:
    mary = ReminderPayload(7, "call Mary", "Mary", NOW, timezone="Asia/Taipei")
    assert outbox.put(replace(item("k1"), payload=mary), now=NOW)
    assert outbox.put(item("k2", text="water the plants"), now=NOW)

    def matches(text: str) -> bool:
        return "Mary" in text

    def redact(text: str) -> str:
        return text.replace("Mary", "[gone]")

    assert outbox.redact_text(matches, redact, dry_run=True) == 1
    assert outbox.redact_text(matches, redact) == 1
    payloads = {i.key: i.reminder for i in outbox.items(HOME)}
    assert (payloads["k1"].text, payloads["k1"].author) == ("call [gone]", "[gone]")
    assert (payloads["k2"].text, payloads["k2"].author) == ("water the plants", "john")
