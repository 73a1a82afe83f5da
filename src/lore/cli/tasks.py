"""`lore tasks list|add|cancel`: scheduled tasks from the command line."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_scoped, number_argument, print_json, runtime, show_usage

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tasks",
        help="list, add or cancel scheduled tasks",
        description="Scheduled tasks: at its time `lore serve` runs one turn with the task's "
        "prompt in its conversation and sends the reply there (a reminder only repeats a "
        "fixed text).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser(
        "list", help="a conversation's scheduled tasks, with how their last run went"
    )
    listing.add_argument("--all", action="store_true", help="include finished and cancelled")
    listing.add_argument(
        "--everywhere", action="store_true", help="every conversation's, not one's"
    )
    add_scoped(listing)
    listing.set_defaults(func=_list)

    add = actions.add_parser(
        "add",
        help="schedule a task",
        description="Schedule a task. WHEN: ISO-8601 or a phrase ('in 10 minutes', "
        "'tomorrow 9am', '明天早上9点', 'завтра в 9').",
        epilog="RECURRENCE: 'daily 09:00', 'weekly mon,wed 18:30', 'weekdays 08:00', "
        "'every 15m', 'every 2h', or cron like '0 9 * * 1-5'.",
    )
    add.add_argument("prompt", metavar="PROMPT", help="what Lore does when it runs")
    add.add_argument("--when", metavar="WHEN", help="when it first runs (optional with --every)")
    add.add_argument("--every", metavar="RECURRENCE", help="repeat on this schedule")
    add.add_argument(
        "--rounds",
        type=int,
        metavar="N",
        help="its budget of tool rounds (default: tasks.max_rounds)",
    )
    add.add_argument(
        "--seconds",
        type=int,
        metavar="N",
        help="its budget of seconds (default: tasks.max_seconds)",
    )
    add_scoped(add)
    add.set_defaults(func=_add)

    cancel = actions.add_parser("cancel", help="cancel a pending task")
    cancel.add_argument("id", metavar="ID", help="the task's number (e.g. 3 or #3)")
    add_scoped(cancel)
    cancel.set_defaults(func=_cancel)

    parser.set_defaults(func=lambda args: show_usage(parser))


def _list(args: argparse.Namespace) -> int:
    from lore.tasks import describe_task

    scope = None if args.everywhere else args.session
    with runtime(args) as lore:
        tasks = lore.tasks.list(scope, include_done=args.all)
        now = lore.clock.now()
    if args.json:
        print_json([task.to_dict() for task in tasks])
        return 0
    if not tasks:
        print(f"No pending tasks in {scope or 'any conversation'}.")
    for task in tasks:
        where = f" in {task.scope}" if scope is None else ""
        print(describe_task(task, now) + where)
    return 0


def _add(args: argparse.Namespace) -> int:
    from lore.reminders import in_words
    from lore.reminders.when import format_local
    from lore.tasks import create_task

    with runtime(args) as lore:
        now = lore.clock.now()
        settings = lore.config.tasks
        task = create_task(
            lore.tasks,
            scope=args.session,
            author=lore.config.user_name,
            prompt=args.prompt,
            when=args.when,
            recurrence=args.every,
            now=now,
            zone=lore.zone,
            channel="cli",
            max_rounds=settings.max_rounds if args.rounds is None else args.rounds,
            max_seconds=settings.max_seconds if args.seconds is None else args.seconds,
        )
    if args.json:
        print_json(task.to_dict())
        return 0
    line = f"Task #{task.id} scheduled for {format_local(task.due_at, lore.zone)}"
    line += f", {in_words(task.due_at - now)}"
    if task.recurrence:
        line += f", then repeating {task.recurrence}"
    print(line + ".")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    task_id = number_argument(args.id, "task", "lore tasks list")
    with runtime(args) as lore:
        task = lore.tasks.cancel(args.session, task_id, now=lore.clock.now())
    if args.json:
        print_json(task.to_dict())
        return 0
    print(f"Cancelled task #{task.id}: {task.prompt}")
    return 0
