"""The in-memory backend carries a feature end to end: the reminder scheduler claims,
leases and delivers into a fake session exactly as it does on the local backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lore.backends.fake.stores import FakeStores
from lore.clock import FixedClock
from lore.reminders.delivery import Delivery, session_delivery
from lore.reminders.scheduler import Scheduler

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = "line:group:family"


async def test_a_due_reminder_reaches_its_conversation_once_on_the_fake_backend() -> None:
    stores = FakeStores()
    stores.reminders.add(
        SCOPE, "john", "给奶奶打电话", NOW + timedelta(minutes=10), timezone="Asia/Taipei", now=NOW
    )
    deliver = session_delivery(stores.sessions, lambda scope: None)
    fire = NOW + timedelta(minutes=10)
    # The first process delivers and dies before marking it done...
    stores.reminders.claim_due(fire)
    [item] = stores.outbox.lease(owner="doomed", now=fire, seconds=60)
    await deliver(Delivery(item))
    # ...so once the lease runs out the next one delivers it again, and the key holds.
    later = fire + timedelta(minutes=2)
    delivered = await Scheduler(stores.reminders, FixedClock(later), deliver).run_once(later)
    assert [d.key for d in delivered] == [item.key]
    [message] = stores.sessions.live(SCOPE).messages
    assert "给奶奶打电话" in message["content"] and message["delivery"] == item.key
    assert [i.status for i in stores.outbox.items(SCOPE)] == ["delivered"]
    assert await Scheduler(stores.reminders, FixedClock(later), deliver).run_once(later) == []
