"""What every ChatLedger does: an update is received once, ever; one never handled is
claimed again once its process's lease ran out (after a restart too), and only then;
handling drops its text; sent ids are remembered across a restart and pruned with age."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from lore.ports.chat_ledger import RETENTION, ChatLedger
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
LEASE = 60.0
Opener = Callable[[], ChatLedger]


@pytest.fixture
def reopen(backend: Backend) -> Opener:
    """Opens the ledger on the backend's storage again, as a restarted process would."""
    return lambda: backend.reopen().chat_ledger


@pytest.fixture
def ledger(backend: Backend) -> ChatLedger:
    return backend.chat_ledger


def _receive(ledger: ChatLedger, key: str, text: str = "媽媽 lands at 3 PM 🛬", *,
             owner: str = "A", at: datetime = NOW, channel: str = "line") -> bool:  # fmt: skip
    payload = {"type": "message", "message": {"text": text}, "nested": [1, {"ok": True}]}
    return ledger.receive(channel, key, payload, owner=owner, now=at, seconds=LEASE)


def test_an_update_is_received_once_whatever_became_of_it(ledger: ChatLedger) -> None:
    assert _receive(ledger, "01HEVENT")
    assert not _receive(ledger, "01HEVENT", owner="B")
    ledger.handled("line", "01HEVENT")
    assert not _receive(ledger, "01HEVENT", at=NOW + timedelta(hours=5))
    # The same id on another channel is another update.
    assert _receive(ledger, "01HEVENT", channel="telegram")


def test_an_update_held_by_a_live_process_is_not_claimed(ledger: ChatLedger) -> None:
    _receive(ledger, "e1")
    assert ledger.claim("line", owner="B", now=NOW + timedelta(seconds=30), seconds=LEASE) == []
    # The holder keeps it while its turn runs long.
    assert ledger.renew("line", owner="A", now=NOW + timedelta(seconds=50), seconds=LEASE) == 1
    later = NOW + timedelta(seconds=100)
    assert ledger.claim("line", owner="B", now=later, seconds=LEASE) == []


def test_an_update_never_handled_is_claimed_after_a_restart_with_its_payload(
    reopen: Opener,
) -> None:
    first = reopen()
    _receive(first, "e1", "第一 / первое")
    _receive(first, "e2", "second {braces}")
    _receive(first, "e3")
    first.handled("line", "e3")
    after = reopen()  # the process died; another opens the same storage
    later = NOW + timedelta(seconds=LEASE + 1)
    claimed = after.claim("line", owner="B", now=later, seconds=LEASE)
    assert [c.key for c in claimed] == ["e1", "e2"]
    assert claimed[0].payload == {
        "type": "message",
        "message": {"text": "第一 / первое"},
        "nested": [1, {"ok": True}],
    }
    assert claimed[1].payload["message"]["text"] == "second {braces}"
    assert abs((claimed[0].received_at - NOW).total_seconds()) < 1
    assert claimed[0].received_at.tzinfo is not None
    # Claimed: the new holder's lease runs, so nobody else takes them.
    assert after.claim("line", owner="C", now=later, seconds=LEASE) == []
    assert after.claim("telegram", owner="C", now=later + timedelta(hours=1), seconds=1) == []


def test_the_leases_of_an_ended_process_run_out_at_once_on_its_channel_only(
    ledger: ChatLedger,
) -> None:
    _receive(ledger, "e1", "奶奶几点到 / когда прилетит бабушка", owner="ended")
    _receive(ledger, "e2", owner="ended", channel="telegram")
    _receive(ledger, "e3", owner="alive")
    _receive(ledger, "e4", owner="ended")
    ledger.handled("line", "e4")
    soon = NOW + timedelta(seconds=1)
    assert ledger.end_leases("line", []) == 0
    assert ledger.end_leases("line", ["ended"]) == 1  # e4 is handled: nothing to end
    claimed = ledger.claim("line", owner="heir", now=soon, seconds=LEASE)
    assert [(c.key, c.payload["message"]["text"]) for c in claimed] == [
        ("e1", "奶奶几点到 / когда прилетит бабушка")
    ]
    assert ledger.claim("line", owner="other", now=soon, seconds=LEASE) == []  # heir's now
    assert ledger.claim("telegram", owner="heir", now=soon, seconds=LEASE) == []


def test_a_handled_update_is_never_claimed_and_its_text_is_dropped(ledger: ChatLedger) -> None:
    _receive(ledger, "e1")
    ledger.handled("line", "e1")
    far = NOW + timedelta(days=1)
    assert ledger.claim("line", owner="B", now=far, seconds=LEASE) == []


def test_claim_takes_the_oldest_first_up_to_the_limit(ledger: ChatLedger) -> None:
    for n in range(5):
        _receive(ledger, f"k{n}", at=NOW + timedelta(seconds=n))
    later = NOW + timedelta(minutes=5)
    first = ledger.claim("line", owner="B", now=later, seconds=LEASE, limit=2)
    rest = ledger.claim("line", owner="B", now=later, seconds=LEASE)
    assert [c.key for c in first] == ["k0", "k1"]
    assert [c.key for c in rest] == ["k2", "k3", "k4"]


def test_sent_ids_are_remembered_across_a_restart(reopen: Opener) -> None:
    first = reopen()
    first.note_sent("line", ["600000000000000001", "600000000000000002"], now=NOW)
    first.note_sent("line", [], now=NOW)
    again = reopen()
    assert again.was_sent("line", "600000000000000002")
    assert not again.was_sent("line", "600000000000000003")
    assert not again.was_sent("telegram", "600000000000000001")


def test_prune_forgets_old_handled_updates_and_sent_ids_but_keeps_unhandled_ones(
    ledger: ChatLedger,
) -> None:
    old = NOW - RETENTION - timedelta(hours=1)
    _receive(ledger, "old-handled", at=old)
    ledger.handled("line", "old-handled")
    _receive(ledger, "old-unhandled", at=old)
    _receive(ledger, "new-handled")
    ledger.handled("line", "new-handled")
    ledger.note_sent("line", ["old-id"], now=old)
    ledger.note_sent("line", ["new-id"], now=NOW)
    assert ledger.prune(before=NOW - RETENTION) == 2
    assert _receive(ledger, "old-handled")  # forgotten: a new update now
    assert not _receive(ledger, "new-handled")
    assert not ledger.was_sent("line", "old-id") and ledger.was_sent("line", "new-id")
    [kept] = ledger.claim("line", owner="B", now=NOW + timedelta(seconds=30), seconds=LEASE)
    assert kept.key == "old-unhandled"


def _forget(words: str) -> tuple[Callable[[str], bool], Callable[[str], str]]:
    def match(value: str) -> bool:
        return words.lower() in value.lower()

    def redact(value: str) -> str:
        return value.replace(words, "[forgotten]")

    return match, redact


def test_forgetting_words_rewrites_an_unhandled_update_but_keeps_its_id_and_turn(
    reopen: Opener,
) -> None:
    first = reopen()
    _receive(first, "e1", "Мой врач — доктор Петрова, 星期五见")
    _receive(first, "e2", "nothing to forget")
    match, redact = _forget("доктор Петрова")
    assert first.redact_text(match, redact, dry_run=True) == 1
    assert first.redact_text(match, redact) == 1
    assert first.redact_text(match, redact) == 0  # nothing of it is left
    after = reopen()
    # The id stays: a redelivery is still the same update, never a new one.
    assert not _receive(after, "e1", "Мой врач — доктор Петрова, 星期五见", owner="B")
    later = NOW + timedelta(seconds=LEASE + 1)
    claimed = after.claim("line", owner="B", now=later, seconds=LEASE)
    assert [c.key for c in claimed] == ["e1", "e2"]  # still answered, in its place
    assert claimed[0].payload == {
        "type": "message",
        "message": {"text": "Мой врач — [forgotten], 星期五见"},
        "nested": [1, {"ok": True}],
    }
    assert claimed[1].payload["message"]["text"] == "nothing to forget"


def test_a_dry_run_of_forgetting_changes_no_update(ledger: ChatLedger) -> None:
    _receive(ledger, "e1", "王大夫每周五")
    match, redact = _forget("王大夫")
    assert ledger.redact_text(match, redact, dry_run=True) == 1
    [claimed] = ledger.claim("line", owner="B", now=NOW + timedelta(hours=1), seconds=LEASE)
    assert claimed.payload["message"]["text"] == "王大夫每周五"


def test_forgetting_words_passes_over_handled_updates_whose_text_is_gone(
    ledger: ChatLedger,
) -> None:
    _receive(ledger, "e1", "王大夫每周五")
    ledger.handled("line", "e1")
    match, redact = _forget("王大夫")
    assert ledger.redact_text(match, redact) == 0
    assert not _receive(ledger, "e1", "王大夫每周五")


def test_every_time_the_ledger_is_given_must_be_aware(ledger: ChatLedger) -> None:
    naive = datetime(2026, 11, 30, 9, 0)
    refused: list[Callable[[], object]] = [
        lambda: _receive(ledger, "u1", at=naive),
        lambda: ledger.renew("line", owner="A", now=naive, seconds=LEASE),
        lambda: ledger.claim("line", owner="A", now=naive, seconds=LEASE),
        lambda: ledger.note_sent("line", ["m1"], now=naive),
        lambda: ledger.note_sent("line", [], now=naive),
        lambda: ledger.prune(before=naive),
    ]
    for call in refused:
        with pytest.raises(ValueError, match="chat ledger times must be aware"):
            call()
    assert _receive(ledger, "u1") and not ledger.was_sent("line", "m1")


def test_a_conversation_name_is_kept_across_a_restart_and_changes_with_a_rename(
    reopen: Opener,
) -> None:
    first = reopen()
    assert first.name_conversation("line:group:C1", "  王家\n family ", now=NOW)
    assert not first.name_conversation("line:group:C1", "王家 family", now=NOW + timedelta(1))
    assert first.name_conversation("telegram:-100", "Семья", now=NOW)
    again = reopen()
    names = again.conversation_names()
    assert {scope: n.name for scope, n in names.items()} == {
        "line:group:C1": "王家 family",
        "telegram:-100": "Семья",
    }
    assert names["line:group:C1"].named_at == NOW
    # A rename replaces it, and says when; a blank name changes nothing.
    assert again.name_conversation("line:group:C1", "王家 🏠", now=NOW + timedelta(hours=2))
    assert not again.name_conversation("line:group:C1", " \n ", now=NOW + timedelta(hours=3))
    renamed = reopen().conversation_names()["line:group:C1"]
    assert (renamed.name, renamed.named_at) == ("王家 🏠", NOW + timedelta(hours=2))


def test_conversation_names_outlive_the_pruning_of_updates(ledger: ChatLedger) -> None:
    assert ledger.name_conversation("whatsapp:15551234567", "Amy " + "x" * 300, now=NOW)
    ledger.prune(before=NOW + RETENTION * 10)
    kept = ledger.conversation_names()["whatsapp:15551234567"].name
    assert kept.startswith("Amy x") and len(kept) == 200
