"""A reminder's occurrence travels through the outbox as a typed payload: stored as the
same JSON object as ever, read back equal, and a stored payload that cannot be read is
kept, reported with what is wrong with it (never what it says), retried and in the end
shown as failed; it never stops the deliveries beside it."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lore.errors import DamagedRecordError
from lore.ports.outbox import (
    MAX_ATTEMPTS,
    Outbox,
    OutboxItem,
    ReminderPayload,
    UnreadablePayload,
    payload_from_json,
    payload_from_text,
    payload_to_json,
)
from lore.reminders.delivery import Delivery, due_summary
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = "line:group:家族"

# An occurrence's payload exactly as Lore has always written it into the outbox.
STORED = (
    '{"reminder_id": 7, "text": "倒垃圾 / вынести мусор", "author": "Маша", '
    '"due_at": "2026-11-30T09:00:00+00:00", "timezone": "Asia/Taipei", "late": true, '
    '"recurrence": "every day at 17:00", "next_due": "2026-12-01T09:00:00+00:00"}'
)
PAYLOAD = ReminderPayload(
    reminder_id=7,
    text="倒垃圾 / вынести мусор",
    author="Маша",
    due_at=NOW,
    timezone="Asia/Taipei",
    late=True,
    recurrence="every day at 17:00",
    next_due=NOW + timedelta(days=1),
)


def test_the_stored_json_reads_into_the_payload_and_writes_back_unchanged() -> None:
    assert payload_from_text(STORED) == PAYLOAD
    assert json.dumps(payload_to_json(PAYLOAD), ensure_ascii=False) == STORED
    assert payload_from_json(json.loads(STORED)) == PAYLOAD
    one_shot = ReminderPayload(8, "喝水", "", NOW)
    assert payload_from_json(payload_to_json(one_shot)) == one_shot
    assert payload_to_json(one_shot)["recurrence"] is None


def test_what_older_payloads_leave_out_reads_as_it_always_did() -> None:
    old = {"reminder_id": 3, "text": "tea", "due_at": "2026-11-30T09:00:00+00:00"}
    assert payload_from_json(old) == ReminderPayload(3, "tea", "", NOW, "UTC")
    newer = payload_from_json({**old, "timezone": None, "newer": [1]})
    assert newer == ReminderPayload(3, "tea", "", NOW, "UTC")


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ("{not json", "not JSON"),
        ('"a string"', "the payload is text, not a JSON object"),
        ("[]", "the payload is a list, not a JSON object"),
        ('{"text": "秘密"}', "reminder_id is missing"),
        ('{"reminder_id": "7", "text": "秘密"}', "reminder_id is text, not a number"),
        ('{"reminder_id": true, "text": "秘密"}', "reminder_id is true or false"),
        ('{"reminder_id": 7, "text": 5, "due_at": "2026-11-30T09:00:00+00:00"}', "text is a"),
        ('{"reminder_id": 7, "text": "秘密", "due_at": "tomorrow 秘密"}', "due_at is text"),
        ('{"reminder_id": 7, "text": "秘密", "due_at": "2026-11-30T09:00:00"}', "not an aware"),
        ('{"reminder_id": 7, "text": "x", "due_at": "2026-11-30T09:00:00Z", "late": 1}', "late"),
    ],
)
def test_a_payload_that_cannot_be_read_says_what_is_wrong_but_not_what_it_says(
    stored: str, problem: str
) -> None:
    read = payload_from_text(stored)
    assert isinstance(read, UnreadablePayload)
    assert read.raw == stored and problem in read.problem
    assert "秘密" not in str(read) and "tomorrow" not in str(read)
    item = OutboxItem(1, "reminder:7:1", SCOPE, "line", "reminder", read, "pending", 0, NOW)
    with pytest.raises(DamagedRecordError, match="reminder:7:1 holds an unreadable payload"):
        Delivery(item, NOW)
    with pytest.raises(DamagedRecordError):
        payload_to_json(read)  # never queued anew
    assert due_summary(item)[0] == 0 and read.problem in due_summary(item)[1]


def _damage(outbox: Outbox, key: str, stored: str) -> None:
    """Overwrite an item's stored payload as damage (or a newer Lore) would."""
    db: Any = outbox.db  # type: ignore[attr-defined]
    with db.atomic() as conn:
        if type(outbox).__name__ == "PostgresOutbox":
            conn.execute("UPDATE outbox SET payload = %s::jsonb WHERE key = %s", (stored, key))
        else:
            conn.execute("UPDATE outbox SET payload = ? WHERE key = ?", (stored, key))


async def test_a_damaged_payload_is_kept_retried_and_shown_failed_while_others_go_out(
    lore: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    for number, text in enumerate(["倒垃圾", "вынести мусор"]):
        due = NOW + timedelta(minutes=number)
        lore.reminders.add(SCOPE, "Маша", text, due, timezone="Asia/Taipei", now=NOW)
    lore.reminders.claim_due(NOW + timedelta(minutes=1))
    [broken] = [i for i in lore.outbox.items(SCOPE) if i.reminder.text == "倒垃圾"]
    _damage(lore.outbox, broken.key, '{"reminder_id": "one", "text": "倒垃圾"}')
    [listed] = [i for i in lore.outbox.items(SCOPE) if i.key == broken.key]
    assert isinstance(listed.payload, UnreadablePayload)

    delivered: list[Delivery] = []

    async def deliver(due: Delivery) -> None:
        delivered.append(due)

    scheduler = Scheduler(lore.reminders, lore.clock, deliver)
    moment = NOW + timedelta(minutes=1)
    with caplog.at_level(logging.ERROR, logger="lore.reminders.scheduler"):
        await scheduler.run_once(moment)
    assert [d.text for d in delivered] == ["вынести мусор"]
    assert "reminder_id is text, not a number" in caplog.text
    assert "倒垃圾" not in caplog.text  # the log never quotes a reminder

    for _ in range(MAX_ATTEMPTS):
        moment += timedelta(hours=2)
        await scheduler.run_once(moment)
    [kept] = [i for i in lore.outbox.items(SCOPE) if i.key == broken.key]
    assert (kept.status, kept.attempts) == ("failed", MAX_ATTEMPTS)
    assert "unreadable payload (reminder_id is text, not a number)" in kept.last_error
    assert len(delivered) == 1


async def test_forget_everywhere_reaches_the_text_of_a_damaged_payload(lore: Runtime) -> None:
    lore.reminders.add(SCOPE, "Маша", "倒垃圾", NOW, timezone="Asia/Taipei", now=NOW)
    lore.reminders.claim_due(NOW)
    [item] = lore.outbox.items(SCOPE)
    damaged = '["倒垃圾 at the door"]' if lore.config.database_url else '{"text": "倒垃圾 at'
    _damage(lore.outbox, item.key, damaged)

    def match(text: str) -> bool:
        return "倒垃圾" in text

    def redact(text: str) -> str:
        return text.replace("倒垃圾", "[forgotten]")

    assert lore.outbox.redact_text(match, redact) == 1
    [kept] = lore.outbox.items(SCOPE)
    assert isinstance(kept.payload, UnreadablePayload)
    assert "倒垃圾" not in kept.payload.raw and "[forgotten]" in kept.payload.raw
