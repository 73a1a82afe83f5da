"""Delivering a due reminder: into its conversation's live session, then as an event.

The session gets an assistant message carrying the occurrence's idempotency key, so the
model later knows what it reminded the user of and a redelivery (after a crash between
delivering and marking done) never adds it twice; the `ReminderDue` event goes to the
channel, which renders it (the terminal above the prompt, chat channels as a mention).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lore.events import Emit, ReminderDue
from lore.llm.base import Message
from lore.ports.outbox import OutboxItem, ReminderPayload, UnreadablePayload
from lore.ports.reminders import zone_named
from lore.reminders.when import format_local

if TYPE_CHECKING:
    from lore.ports.sessions import SessionStore

__all__ = [
    "TASK_KINDS",
    "Deliver",
    "Delivery",
    "due_summary",
    "format_reminder",
    "mention_for",
    "reminder_event",
    "reminder_message",
    "session_delivery",
]


@dataclass(frozen=True)
class Delivery:
    """One occurrence of a reminder as the scheduler hands it to a delivery: the outbox
    item that holds it, and the moment `at` it is delivered. DamagedRecordError when the
    item's payload could not be read (the scheduler retries it, then shows it failed)."""

    item: OutboxItem
    at: datetime
    reminder: ReminderPayload = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reminder", self.item.reminder)

    @property
    def id(self) -> int:
        return self.reminder.reminder_id

    @property
    def key(self) -> str:
        return self.item.key

    @property
    def scope(self) -> str:
        return self.item.scope

    @property
    def author(self) -> str:
        return self.reminder.author

    @property
    def text(self) -> str:
        return self.reminder.text

    @property
    def late(self) -> bool:
        return self.reminder.late

    @property
    def due_at(self) -> datetime:
        return self.reminder.due_at

    @property
    def next_due(self) -> datetime | None:
        """Where a recurring reminder moved when this occurrence was claimed."""
        return self.reminder.next_due

    @property
    def timezone(self) -> str:
        return self.reminder.timezone

    @property
    def noun(self) -> str:
        """What it is: a "reminder", a scheduled "task"'s reply (or failure), or what the
        "heartbeat" found."""
        if self.item.kind in TASK_KINDS:
            return "task"
        return "heartbeat" if self.item.kind == "heartbeat" else "reminder"


def due_summary(item: OutboxItem) -> tuple[int, str, str | None]:
    """The reminder's id, text and due time (ISO) an undelivered occurrence shows (`lore
    remind list`, the API); one whose payload cannot be read shows #0 and why."""
    payload = item.payload
    if isinstance(payload, UnreadablePayload):
        return 0, f"(a delivery that cannot be read: {payload.problem})", None
    return payload.reminder_id, payload.text, payload.due_at.isoformat()


# Outbox kinds a scheduled task's run queues: its reply (the turn already put it in the
# session), or why it could not run.
TASK_KINDS = ("task", "task_failed")

# How a due occurrence reaches its conversation (the session, then the channel).
Deliver = Callable[[Delivery], Awaitable[None]]


def mention_for(due: Delivery) -> str:
    return f"@{due.author}" if due.author else ""


def format_reminder(due: Delivery, mention: str | None = None) -> str:
    """The reminder as one line, the one way every place words it: "Reminder for @john:
    take out the trash" where a person is named (`mention`: how the channel writes them,
    by default @author), "take out the trash" in the person's own chat (`mention=""`);
    one delivered well after it fell due adds "(late) — was due" and when."""
    who = mention_for(due) if mention is None else mention
    if due.noun != "reminder":
        who = ""  # a task's reply (or the heartbeat's) is the conversation's: no one named
    line = f"Reminder for {who}: {due.text}" if who else due.text
    if due.late:
        line += f" (late) — was due {format_local(due.due_at, zone_named(due.timezone))}"
    return line


def reminder_line(due: Delivery, mention: str | None = None) -> str:
    """`format_reminder` with the ⏰ in front (a task's reply: 🗓), as chats and
    transcripts show it."""
    return f"{_MARKS[due.noun]} {format_reminder(due, mention)}"


_MARKS = {"reminder": "⏰", "task": "🗓", "heartbeat": "💓"}


def reminder_message(due: Delivery) -> Message:
    message: Message = {
        "role": "assistant",
        "content": reminder_line(due),
        "late": due.late,
        # When it arrived, as every message says: the transcript and search date it by this.
        "timestamp": due.at.astimezone(UTC).isoformat(timespec="seconds"),
    }
    if due.noun == "reminder":  # a task's notice (or the heartbeat's) is no reminder's
        message["reminder_id"] = due.id
    return message


def reminder_event(due: Delivery) -> ReminderDue:
    return ReminderDue(
        scope=due.scope,
        text=format_reminder(due),
        reminder_id=due.id,
        late=due.late,
        mention=mention_for(due),
        mark=_MARKS[due.noun],
    )


def session_delivery(
    sessions: SessionStore,
    emit: Callable[[str], Emit | None],
    channel: Callable[[str], Deliver | None] | None = None,
) -> Deliver:
    """A `Scheduler` delivery: each reminder goes into its conversation's live session
    (once, by its key), then to the channel `channel(scope)` names (awaited: a failed send
    is retried), else as an event to the emit `emit(scope)` names, if any.

    The append runs on the event loop, not in a worker thread: it is one fsynced line,
    and a cancellation can then never land between a written line and the outbox."""

    async def deliver(due: Delivery) -> None:
        if due.item.kind != "task":  # a task's reply is in the session: its turn put it there
            sessions.live(due.scope).append_once(due.key, [reminder_message(due)])
        through = channel(due.scope) if channel is not None else None
        if through is not None:
            await through(due)
            return
        target = emit(due.scope)
        if target is not None:
            target(reminder_event(due))

    return deliver
