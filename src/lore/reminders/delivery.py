"""Delivering a claimed reminder: into its conversation's live session, then as an event.

The session gets an assistant message, so the model later knows what it reminded the
user of; the `ReminderDue` event goes through the same emit seam as replies, and each
channel renders it (the terminal above the prompt, chat channels as an @-mention).
"""

from __future__ import annotations

from collections.abc import Callable

from lore.backends.local.live import LiveSession
from lore.backends.local.reminders import DueReminder
from lore.events import Emit, ReminderDue
from lore.llm.base import Message
from lore.reminders.scheduler import Deliver
from lore.reminders.when import format_local

__all__ = [
    "deliver_to_session",
    "format_reminder",
    "mention_for",
    "reminder_event",
    "reminder_message",
    "session_delivery",
]


def mention_for(due: DueReminder) -> str:
    return f"@{due.author}" if due.author else ""


def format_reminder(due: DueReminder) -> str:
    """The reminder as one line (Reminder for @john: take out the trash); one delivered
    well after it fell due adds "(late)" and the time it was due. Channels put their own
    mark in front (the terminal and the session use ⏰)."""
    mention = mention_for(due)
    line = f"Reminder for {mention}: {due.text}" if mention else f"Reminder: {due.text}"
    if due.late:
        line += f" (late) — was due {format_local(due.reminder.due_at, due.reminder.zone)}"
    return line


def reminder_message(due: DueReminder) -> Message:
    return {
        "role": "assistant",
        "content": f"⏰ {format_reminder(due)}",
        "reminder_id": due.id,
        "late": due.late,
    }


def reminder_event(due: DueReminder) -> ReminderDue:
    return ReminderDue(
        scope=due.scope,
        text=format_reminder(due),
        reminder_id=due.id,
        late=due.late,
        mention=mention_for(due),
    )


def deliver_to_session(due: DueReminder, session: LiveSession, emit: Emit | None = None) -> Message:
    """Append the reminder to `session` (fsynced), then emit `ReminderDue`."""
    message = reminder_message(due)
    session.append([message])
    if emit is not None:
        emit(reminder_event(due))
    return message


def session_delivery(
    session_for: Callable[[str], LiveSession], emit: Emit | None = None
) -> Deliver:
    """A `Scheduler` delivery callable: each reminder goes to `session_for(its scope)`.

    The append runs on the event loop, not in a worker thread: it is one fsynced line,
    and a cancellation can then never land between a written line and a claim being
    released (which would deliver the reminder twice). `emit` follows on the loop, so
    a terminal can draw the event above its prompt.
    """

    async def deliver(due: DueReminder) -> None:
        session_for(due.scope).append([reminder_message(due)])
        if emit is not None:
            emit(reminder_event(due))

    return deliver
