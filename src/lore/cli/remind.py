"""`lore remind list|add|cancel`: reminders from the command line."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_scoped, number_argument, print_json, runtime, show_usage

if TYPE_CHECKING:
    from lore.ports.outbox import OutboxItem

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "remind",
        help="list, add or cancel reminders",
        description="Reminders the scheduler (`lore serve`, `lore chat`) pushes to a conversation.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser("list", help="a conversation's pending reminders")
    listing.add_argument("--all", action="store_true", help="include delivered and cancelled")
    add_scoped(listing)
    listing.set_defaults(func=_list)

    add = actions.add_parser(
        "add",
        help="set a reminder",
        description="Set a reminder. WHEN: ISO-8601 or a phrase ('in 10 minutes', "
        "'tomorrow 9am', '明天早上9点', 'завтра в 9').",
        epilog="RECURRENCE: 'daily 09:00', 'weekly mon,wed 18:30', 'weekdays 08:00', "
        "'every 15m', 'every 2h', or cron like '0 9 * * 1-5'.",
    )
    add.add_argument("text", metavar="TEXT", help="what to be reminded of")
    add.add_argument("--when", metavar="WHEN", help="when it first fires (optional with --every)")
    add.add_argument("--every", metavar="RECURRENCE", help="repeat on this schedule")
    add_scoped(add)
    add.set_defaults(func=_add)

    cancel = actions.add_parser("cancel", help="cancel a pending reminder")
    cancel.add_argument("id", metavar="ID", help="the reminder's number (e.g. 7 or #7)")
    add_scoped(cancel)
    cancel.set_defaults(func=_cancel)

    parser.set_defaults(func=lambda args: show_usage(parser))


def _list(args: argparse.Namespace) -> int:
    from lore.reminders import describe_reminder
    from lore.reminders.delivery import due_summary

    with runtime(args) as lore:
        reminders = lore.reminders.list(args.session, include_done=args.all)
        now = lore.clock.now()
        # Occurrences due but not delivered: failed for good, or waiting for a retry.
        stuck = [
            item
            for item in lore.outbox.items(args.session, limit=50)
            if item.status == "failed" or (item.status == "pending" and item.attempts)
        ]
    if args.json:
        rows = {r.id: r.to_dict() for r in reminders}
        for item in stuck:
            reminder_id, text, _ = due_summary(item)
            if reminder_id not in rows:  # a one-shot: done as far as its schedule goes
                rows[reminder_id] = {"id": reminder_id, "text": text}
            rows[reminder_id].setdefault("undelivered", []).append(_undelivered(item))
        print_json(list(rows.values()))
        return 0
    if not reminders:
        print(f"No pending reminders in {args.session}.")
    for reminder in reminders:
        by = f" (by {reminder.author})" if reminder.author else ""
        print(describe_reminder(reminder, now) + by)
    for item in stuck:
        state = "failed" if item.status == "failed" else "not delivered yet, retrying"
        reminder_id, text, _ = due_summary(item)
        print(
            f"! #{reminder_id} {text} — {state} "
            f"after {item.attempts} attempt(s): {item.last_error or 'no reason given'}"
        )
    return 0


def _undelivered(item: OutboxItem) -> dict[str, object]:
    from lore.reminders.delivery import due_summary

    return {
        "due_at": due_summary(item)[2],
        "status": item.status,
        "attempts": item.attempts,
        "error": item.last_error,
    }


def _add(args: argparse.Namespace) -> int:
    from lore.reminders import create_reminder, in_words
    from lore.reminders.when import format_local

    with runtime(args) as lore:
        now = lore.clock.now()
        reminder = create_reminder(
            lore.reminders,
            scope=args.session,
            author=lore.config.user_name,
            text=args.text,
            when=args.when,
            recurrence=args.every,
            now=now,
            zone=lore.zone,
            channel="cli",
        )
    if args.json:
        print_json(reminder.to_dict())
        return 0
    line = f"Reminder #{reminder.id} set for {format_local(reminder.due_at, reminder.zone)}"
    line += f", {in_words(reminder.due_at - now)}"
    if reminder.recurrence:
        line += f", then repeating {reminder.recurrence}"
    print(line + ".")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    reminder_id = number_argument(args.id, "reminder", "lore remind list")
    with runtime(args) as lore:
        reminder = lore.reminders.cancel(
            args.session, reminder_id, by=lore.config.user_name, now=lore.clock.now()
        )
    if args.json:
        print_json(reminder.to_dict())
    else:
        print(f"Cancelled reminder #{reminder.id}: {reminder.text}")
    return 0
