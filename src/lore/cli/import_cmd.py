"""`lore import chatgpt|claude|nanobot|openclaw|mem0|markdown PATH`, `lore import list`
and `lore import undo ID`: bring another assistant's history (or a folder of notes) into
the archive, the notes and the memories."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common, print_json, runtime, session_key, show_usage

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["register"]

_SOURCES = {
    "chatgpt": "the ChatGPT data export: conversations.json, the folder it is in, or the "
    "export's zip. Each conversation keeps the branch its user last saw (edited and "
    "regenerated turns leave other branches), its user and assistant messages (no system "
    "prompts, tool calls or hidden context), their times and its title.",
    "claude": "the Claude export's conversations.json (or its folder or zip): each "
    "conversation's human and assistant messages, their times and its name.",
    "nanobot": "a nanobot home (~/.nanobot), its workspace or a folder of its session "
    "files: each session (*.jsonl) becomes a conversation with its messages' times; "
    "USER.md, memory/MEMORY.md and SOUL.md become notes under memory/imported/nanobot/, "
    "and each bullet line of USER.md and memory/MEMORY.md a memory; memory/history.jsonl "
    "(its summaries) becomes a note of dated sections.",
    "openclaw": "an OpenClaw workspace (~/.openclaw/workspace): MEMORY.md and the "
    "Markdown under memory/ (the daily logs, dated by their names) become notes under "
    "memory/imported/openclaw/.",
    "mem0": 'a mem0 export: the JSON its API returns for get_all ({"results": [...]}, '
    "or a list): each memory becomes one of Lore's, dated when mem0 made it, its text "
    "kept in an archived session it links to.",
    "markdown": "a folder of Markdown notes (an Obsidian vault): each .md file, front matter "
    "and all, becomes a note under memory/imported/ (hidden folders such as .obsidian are "
    "left out).",
}

_EXTRACTION = (
    "Memories are not extracted from imported conversations yet: they are archived "
    "sessions, found by `lore memory search` and the assistant's search (--no-extract "
    "states it; it is the only behaviour for now). Facts another agent kept (mem0's, "
    "nanobot's) become memories, each checked as any memory is: one holding a secret or "
    "over 500 characters is skipped with the reason."
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="bring history from ChatGPT, Claude, nanobot, OpenClaw, mem0 or Markdown notes",
        description="Import another assistant's conversations as archived sessions (with "
        "their own dates, title and source, searchable at once) or a folder of notes. The "
        "export is read and checked before anything is written; a damaged item is skipped "
        "with its reason; importing the same export again adds nothing; `lore import undo "
        "ID` removes one import whole. " + _EXTRACTION,
    )
    actions = parser.add_subparsers(dest="action", metavar="SOURCE")
    for source, what in _SOURCES.items():
        action = actions.add_parser(
            source, help=f"import {what.split(':')[0]}", description=f"Import {what} {_EXTRACTION}"
        )
        action.add_argument(
            "path", metavar="PATH", type=_path, help="the export file, folder or zip"
        )
        add_common(action)
        action.add_argument(
            "--scope",
            "--session",
            dest="session",
            default="cli:default",
            type=session_key,
            metavar="KEY",
            help="the conversation the history belongs to (default: cli:default, yours)",
        )
        action.add_argument(
            "--dry-run", action="store_true", help="print what would be imported; write nothing"
        )
        action.add_argument(
            "--no-extract",
            action="store_true",
            help="import without extracting memories (the only behaviour for now)",
        )
        action.add_argument(
            "--since", metavar="DATE", help="only what changed on or after DATE (YYYY-MM-DD)"
        )
        action.add_argument("--json", action="store_true", help="print the result as JSON")
        action.set_defaults(func=_import, source=source)

    listing = actions.add_parser(
        "list", help="the imports made, newest last", description="The imports made, newest last."
    )
    add_common(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_list)

    undo = actions.add_parser(
        "undo",
        help="remove everything one import added",
        description="Remove the sessions and notes one import added (from the archive, the "
        "search index and the workspace) as one operation; the same export can then be "
        "imported again.",
    )
    undo.add_argument("import_id", metavar="ID", help="the import's id (or its first characters)")
    add_common(undo)
    undo.add_argument("--json", action="store_true", help="print the result as JSON")
    undo.set_defaults(func=_undo)
    parser.set_defaults(func=lambda args: show_usage(parser))


def _import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lore.import_job import parse_since, run_import
    from lore.search.rebuild import Progress
    from lore.text import counted

    def bar(what: str, total: int) -> Progress:
        return Progress(total, what, stream=sys.stderr)

    with runtime(args) as lore:
        done = run_import(
            lore,
            args.source,
            Path(args.path).expanduser(),
            scope=args.session,
            since=parse_since(args.since, lore.zone),
            dry_run=args.dry_run,
            progress=bar,
        )
    summary = done.plan.summary()
    if args.json:
        print_json(done.to_dict())
        return 0
    if args.dry_run:
        _print_plan(summary, dry_run=True)
        return 0
    record = done.record
    assert record is not None
    if not done.written:
        held = counted(done.plan.already_imported, "item")
        print(f"Nothing new to import ({held} already here).")
        return 0
    _print_plan(summary, dry_run=False)
    if summary["memories"] > record.memories:
        held = summary["memories"] - record.memories
        print(f"{counted(held, 'fact')} Lore held already added no memory.")
    print(f"Import {record.id}: undo it with `lore import undo {record.id}`.")
    return 0


def _print_plan(summary: dict[str, Any], *, dry_run: bool) -> None:
    from lore.text import counted

    verb = "Would import" if dry_run else "Imported"
    parts = []
    if summary["conversations"] or summary["source"] in ("chatgpt", "claude"):
        parts.append(
            f"{counted(summary['conversations'], 'conversation')} "
            f"({counted(summary['messages'], 'message')})"
        )
    if summary["memories"]:
        parts.append(counted(summary["memories"], "memory", "memories"))
    if summary["notes"] or not parts:
        parts.append(counted(summary["notes"], "note"))
    print(f"{verb} {', '.join(parts)} from {summary['path']}.")
    for title in summary["titles"][:5]:
        print(f"  {title}")
    if len(summary["titles"]) > 5:
        print(f"  … and {len(summary['titles']) - 5} more")
    if summary["already_imported"]:
        print(f"Already imported, left out: {summary['already_imported']}.")
    if summary["before_since"]:
        print(f"Before --since, left out: {summary['before_since']}.")
    for item in summary["skipped"]:
        print(f"Skipped {item['item']}: {item['reason']}.")


def _list(args: argparse.Namespace) -> int:
    from lore.text import counted

    with runtime(args) as lore:
        records = _ledger(lore).records()
    if args.json:
        print_json([r.to_dict() for r in records])
        return 0
    if not records:
        print("No imports yet.")
        return 0
    for r in records:
        state = (
            f" (undone {r.undone_at})"
            if r.undone_at
            else ""
            if r.finished_at
            else " (stopped part-way: undo it and import again)"
        )
        made = counted(len(r.sessions), "session") + ", " + counted(len(r.notes), "note")
        if r.memories:
            made += ", " + counted(r.memories, "memory", "memories")
        print(f"{r.id} · {r.started_at} · {r.source} · {made} · {r.path}{state}")
    return 0


def _undo(args: argparse.Namespace) -> int:
    from lore.import_job import run_undo
    from lore.text import counted

    with runtime(args) as lore:
        undone = run_undo(lore, args.import_id)
    record = undone.record
    if args.json:
        print_json(
            {
                "id": record.id,
                "sessions_removed": undone.sessions,
                "notes_removed": undone.notes,
                "memories_forgotten": undone.memories,
            }
        )
        return 0
    made = [counted(undone.sessions, "session"), counted(undone.notes, "note")]
    if undone.memories:
        made.append(counted(undone.memories, "memory", "memories"))
    print(f"Removed import {record.id}: {', '.join(made[:-1])} and {made[-1]}.")
    return 0


def _path(text: str) -> str:
    """An empty PATH would read as the current folder: name it or pass `.`."""
    if not text.strip():
        raise argparse.ArgumentTypeError("PATH is empty: name the export file or folder")
    return text


def _ledger(lore: Runtime) -> Any:
    from lore.import_job import import_ledger

    return import_ledger(lore)
