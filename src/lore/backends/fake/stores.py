"""Every fake store at once, typed as the ports (so mypy proves each fake fits its port).

stores = FakeStores()
stores.memories.remember("cli:default", "I drink tea", author="john", via="tool", now=now)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lore.backends.fake.history import FakeHistory
from lore.backends.fake.memories import FakeMemoryStore
from lore.backends.fake.notes import FakeNotes
from lore.backends.fake.reminders import FakeReminderStore
from lore.backends.fake.sessions import FakeSessions
from lore.ports.memories import MemoryStore
from lore.ports.notes import HistoryLog, NotesStore
from lore.ports.outbox import Outbox
from lore.ports.reminders import ReminderStore
from lore.ports.sessions import SessionStore

__all__ = ["FakeStores"]


@dataclass
class FakeStores:
    memories: MemoryStore = field(default_factory=FakeMemoryStore)
    reminders: ReminderStore = field(default_factory=FakeReminderStore)
    sessions: SessionStore = field(default_factory=FakeSessions)
    history: HistoryLog = field(default_factory=FakeHistory)
    notes: NotesStore = field(default_factory=FakeNotes)

    @property
    def outbox(self) -> Outbox:
        return self.reminders.outbox
