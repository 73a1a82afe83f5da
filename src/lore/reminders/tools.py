"""The model's reminder tools: set_reminder, list_reminders, cancel_reminder.

Their descriptions fence them from `remember`: a one-shot todo or anything tied to a
moment is a reminder; a lasting fact is a memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from lore.core.tools import ToolContext, optional_str, required_str
from lore.errors import ConfigError, ToolError

if TYPE_CHECKING:
    from lore.llm.base import Message
    from lore.ports.reminders import ReminderStore

__all__ = ["CancelReminder", "ListReminders", "SetReminder", "reminder_ids_shown"]

_SET = (
    "Schedule a reminder that Lore pushes into this conversation at a given moment, once or "
    "repeating: 'remind me in 10 minutes to…', 'every weekday at 8 tell me…', "
    "'明天早上9点提醒我…', 'напомни завтра в 9…'. "
    "⚠️ A one-shot todo or anything tied to a time is a reminder, never remember. "
    "⚠️ A lasting fact (a birthday, a preference) is remember, not this, unless the user "
    "also asks to be reminded. "
    "⚠️ Work to do at that time (look something up, check, summarise) is schedule_task: a "
    "reminder only repeats its text. "
    "`when`: preferably an ISO-8601 time with offset computed from the current time and "
    "timezone in the runtime context (e.g. 2026-12-01T09:00:00+08:00); the user's own phrase "
    "also works ('in 10 minutes', 'tomorrow 9am', '下午3点', 'завтра в 9'). "
    "`recurrence` only for repeating reminders: 'daily 09:00', 'weekly mon,wed 18:30', "
    "'weekdays 08:00', 'every 15m', 'every 2h', or cron '0 9 * * 1-5'; `when` is then the "
    "first time and may be omitted. The result states the exact local time it will fire: "
    "tell the user that time."
)
_LIST = (
    "List this conversation's pending reminders: #id, local fire time, text, recurrence. "
    "Use it to find an id before cancel_reminder. Reminders only; stored facts are in the "
    "long-term memory block."
)
_CANCEL = (
    "Cancel a pending reminder of this conversation by its #id (from set_reminder or "
    "list_reminders). To erase a stored fact use forget, not this."
)


class SetReminder:
    name = "set_reminder"
    description = _SET
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "what to remind of, in the user's words"},
            "when": {"type": "string", "description": "ISO-8601 with offset, or a phrase"},
            "recurrence": {"type": "string", "description": "for repeating reminders only"},
        },
        "required": ["text"],
    }

    def __init__(self, store: ReminderStore, zone: tzinfo) -> None:
        self._store = store
        self._zone = zone

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from lore.reminders import AlreadySet, create_reminder, in_words
        from lore.reminders.when import format_local

        text = required_str(args, "text")
        when, recurrence = optional_str(args, "when"), optional_str(args, "recurrence")
        try:
            reminder = create_reminder(
                self._store,
                scope=ctx.scope,
                author=ctx.author,
                text=text,
                when=when,
                recurrence=recurrence,
                now=ctx.now,
                zone=_zone(ctx, self._zone),
                channel=ctx.channel,
                session_id=ctx.session_id,
            )
        except AlreadySet as exc:
            ctx.shown_reminder_ids.add(exc.reminder.id)
            return f"Already set: {exc}."
        ctx.shown_reminder_ids.add(reminder.id)
        at = format_local(reminder.due_at, reminder.zone)
        ctx.notices.append(f"⏰ reminder #{reminder.id} set for {at}")
        result = f"Reminder #{reminder.id} set for {at}, {in_words(reminder.due_at - ctx.now)}"
        if reminder.recurrence:
            result += f", then repeating {reminder.recurrence}"
        return result + "."


class ListReminders:
    name = "list_reminders"
    description = _LIST
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, store: ReminderStore, zone: tzinfo) -> None:
        self._store = store
        self._zone = zone

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from lore.reminders import describe_reminder

        reminders = self._store.list(ctx.scope)
        if not reminders:
            return "No pending reminders in this conversation."
        ctx.shown_reminder_ids.update(r.id for r in reminders)
        lines = [f"{describe_reminder(r, ctx.now)} (set by {r.author})" for r in reminders]
        return f"{len(lines)} pending reminder(s):\n" + "\n".join(lines)


class CancelReminder:
    name = "cancel_reminder"
    description = _CANCEL
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"id": {"type": "integer", "description": "the reminder's #id"}},
        "required": ["id"],
    }

    def __init__(self, store: ReminderStore, zone: tzinfo) -> None:
        self._store = store
        self._zone = zone

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        reminder_id = _reminder_id(args.get("id"))
        if reminder_id not in ctx.shown_reminder_ids:
            raise ToolError(
                f"#{reminder_id} was not shown in this conversation; nothing was cancelled. "
                "Call list_reminders and use an #id it shows."
            )
        reminder = self._store.cancel(ctx.scope, reminder_id, by=ctx.author, now=ctx.now)
        ctx.notices.append(f"⏰ reminder #{reminder.id} cancelled")
        return f"Cancelled reminder #{reminder.id}: {reminder.text}"


# How set_reminder and list_reminders name a reminder in what they return (above).
_SHOWN = {
    "set_reminder": re.compile(r"^(?:Reminder #|Already set: reminder #)(\d+) "),
    "list_reminders": re.compile(r"^#(\d+) ", re.MULTILINE),
}


def reminder_ids_shown(messages: Iterable[Message]) -> set[int]:
    """The reminder ids that set_reminder and list_reminders returned in these messages:
    a reminder set in an earlier turn may be cancelled while that turn is in the history."""
    shown: set[int] = set()
    for message in messages:
        pattern = _SHOWN.get(str(message.get("name"))) if message["role"] == "tool" else None
        if pattern is not None:
            shown.update(int(found) for found in pattern.findall(str(message.get("content"))))
    return shown


def _reminder_id(value: object) -> int:
    """7, "7" or "#7"; not true, 7.5 or "1e3", which int() would quietly turn into ids."""
    if isinstance(value, str) and value.strip().lstrip("#").isdecimal():
        return int(value.strip().lstrip("#"))
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ToolError("'id' must be a reminder number like 7")


def _zone(ctx: ToolContext, default: tzinfo) -> tzinfo:
    from lore.clock import resolve_zone

    if not ctx.timezone:
        return default
    try:
        return resolve_zone(ctx.timezone)
    except ConfigError:
        return default
