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
    await deliver(Delivery(item, fire))
    # ...so once the lease runs out the next one delivers it again, and the key holds.
    later = fire + timedelta(minutes=2)
    delivered = await Scheduler(stores.reminders, FixedClock(later), deliver).run_once(later)
    assert [d.key for d in delivered] == [item.key]
    [message] = stores.sessions.live(SCOPE).messages
    assert "给奶奶打电话" in message["content"] and message["delivery"] == item.key
    assert [i.status for i in stores.outbox.items(SCOPE)] == ["delivered"]
    assert await Scheduler(stores.reminders, FixedClock(later), deliver).run_once(later) == []


def test_archived_sessions_of_any_backend_are_indexed_for_search() -> None:
    """Search reads an archived session through the archive port, never its file."""
    from zoneinfo import ZoneInfo

    from lore.backends.fake.search_index import FakeSearchIndex
    from lore.embed import default_embedder
    from lore.search.sources import sync_archive

    stores = FakeStores()
    index = FakeSearchIndex(default_embedder())  # never asked to embed here
    stores.sessions.live(SCOPE).append(
        [{"role": "user", "content": "我们下周去花莲", "author": "john", "timestamp": ""}]
    )
    stores.sessions.close(
        stores.sessions.live(SCOPE),
        reason="new",
        ended_at=NOW,
        zone=ZoneInfo("Asia/Taipei"),
        slug="trip",
    )
    assert sync_archive(index, stores.sessions.archive) == 1
    assert len(index.text_search([SCOPE], "花莲", limit=5, now=NOW.timestamp() + 1)) == 1
    assert sync_archive(index, stores.sessions.archive) == 0  # unchanged: not read again
