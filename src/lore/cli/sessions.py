"""`lore sessions list|show`: closed sessions from the exact archive, and their messages
(`show` also reads a live session: by its id, as `live` (the terminal's) or by its
conversation's key, the names the API and the web page use)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common, load_runtime, print_json, session_key, show_usage
from lore.errors import quoted

if TYPE_CHECKING:
    from lore.messages import Message
    from lore.ports.sessions import LiveSession
    from lore.runtime import Runtime

__all__ = ["register"]

TERMINAL_KEY = "cli:default"  # whose live session `lore sessions show live` reads


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sessions",
        help="list closed sessions or show one's exact messages",
        description="Closed (archived) sessions: the index in sessions/_sessions.jsonl and "
        "the exact transcripts in sessions/archive/.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser(
        "list", help="closed sessions, newest first", description="Closed sessions, newest first."
    )
    add_common(listing)
    listing.add_argument(
        "--session",
        "--scope",
        dest="session",
        type=session_key,
        metavar="KEY",
        help="only this conversation",
    )
    listing.add_argument("--slug", metavar="TEXT", help="only slugs containing TEXT")
    listing.add_argument(
        "--limit", type=_count(1), default=20, help="at most this many (default 20)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_list)

    show = actions.add_parser(
        "show",
        help="the exact messages of a session, closed or live",
        description="Print a session's messages, closed or live (tool calls and results included).",
    )
    add_common(show)
    show.add_argument(
        "session_id",
        metavar="ID",
        help="session id (or its first characters), `live` (the terminal's live session) "
        "or a conversation key (its live session)",
    )
    show.add_argument("--offset", type=int, default=0, help="first message (negative: from end)")
    show.add_argument(
        "--limit", type=_count(0), default=0, help="at most this many (default 0: all)"
    )
    show.add_argument("--json", action="store_true", help="print JSON: metadata and messages")
    show.add_argument(
        "--why",
        action="store_true",
        help="under each reply, what it rested on: memories (as they are now), search "
        "results, files, skills",
    )
    show.set_defaults(func=_show)
    parser.set_defaults(func=lambda args: show_usage(parser))


def _count(lowest: int) -> Callable[[str], int]:
    """A whole number from `lowest` on: below it, "none" would read as "there are none"."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lowest - 1
        if value < lowest:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {lowest}, not {quoted(text)}"
            )
        return value

    return parse


def _list(args: argparse.Namespace) -> int:
    from lore.sessions.importing import session_source
    from lore.sessions.tools import describe_session

    lore = load_runtime(args)
    entries = lore.sessions.archive.entries()
    _hint_unindexed(lore)
    if args.session:
        entries = [e for e in entries if e.key == args.session]
    if args.slug:
        entries = [e for e in entries if args.slug.lower() in e.slug.lower()]
    entries = sorted(reversed(entries), key=lambda e: e.ended_at, reverse=True)
    entries = entries[: args.limit]
    # Title and source: what an imported conversation's metadata records (none for others).
    origins = [session_source(lore.sessions.archive.metadata(e)) for e in entries]
    names = _conversation_names(lore)
    if args.json:
        print_json(
            [
                {
                    **e.to_dict(),
                    "title": title or None,
                    "source": source or None,
                    "name": names.get(e.key),
                }
                for e, (title, source) in zip(entries, origins, strict=True)
            ]
        )
        return 0
    if not entries:
        print("No closed sessions yet.")
        return 0
    for entry, (title, source) in zip(entries, origins, strict=True):
        name = names.get(entry.key)
        print(f"{entry.key} · {name}" if name else entry.key)
        print(describe_session(entry, lore.zone))
        if source:
            print(f"  title: {title or '(untitled)'} · imported from {source}")
    return 0


def _conversation_names(lore: Runtime) -> dict[str, str]:
    """What the chat channels call each conversation (a group's title, a person's name)."""
    from lore.errors import LoreError

    try:
        return {scope: named.name for scope, named in lore.chat_ledger.conversation_names().items()}
    except LoreError:  # a courtesy: the list stands without them
        return {}


def _hint_unindexed(lore: Runtime) -> None:
    """An emptied or cut index hides archived transcripts: say so rather than show less."""
    from lore.backends.local.archive import SessionArchive
    from lore.backends.local.session_repair import unindexed
    from lore.text import counted

    if not isinstance(lore.sessions.archive, SessionArchive):
        return  # another backend keeps its index in the database
    missing = unindexed(lore.config.sessions_dir, lore.config.home)
    if missing:
        print(
            f"lore: {counted(len(missing), 'archived transcript')} missing from the session "
            "index; run `lore doctor` to check it (`lore doctor --repair` rebuilds it)",
            file=sys.stderr,
        )


def _show_live(lore: Runtime, args: argparse.Namespace, wanted: str) -> int:
    """The live (not yet archived) session whose id starts with `wanted`."""
    from lore.errors import SessionError

    sessions = [lore.session(key) for key in lore.sessions.live_keys()]
    found = [s for s in sessions if s.meta.session_id.startswith(wanted) and s.messages]
    if len(found) != 1:
        what = "no" if not found else "more than one"
        raise SessionError(
            f"{what} session {quoted(args.session_id)}, closed or live; see `lore sessions list` "
            "(and /status in a chat for the live one)"
        )
    return _print_live(lore, args, found[0])


def _show_live_of(lore: Runtime, args: argparse.Namespace, key: str) -> int:
    """A conversation's live session, named as the API and the web page name it: `live`
    (the terminal's) or the conversation's key."""
    from lore.errors import SessionError

    session = lore.session(key) if key in lore.sessions.live_keys() else None
    if session is None or not session.messages:
        raise SessionError(f"{key} has no live session; see `lore sessions list --session {key}`")
    return _print_live(lore, args, session)


def _print_live(lore: Runtime, args: argparse.Namespace, session: LiveSession) -> int:
    from lore.text import counted

    total = len(session.messages)
    start = args.offset if args.offset >= 0 else max(total + args.offset, 0)
    end = total if not args.limit else min(total, start + args.limit)
    messages = session.messages[start:end]
    if args.json:
        meta = {"session_id": session.meta.session_id, "key": session.key, "live": True}
        messages = _with_why(lore, session.key, start, messages) if args.why else messages
        print_json({"session": meta, "offset": start, "messages": messages})
        return 0
    count = counted(total, "message")
    print(f"Session {session.meta.session_id} · {session.key} · live · {count}")
    _print_messages(lore, session.key, start, messages, why=args.why)
    return 0


def _print_messages(
    lore: Runtime, scope: str, start: int, messages: list[Message], *, why: bool
) -> None:
    from lore.sessions.tools import render_message
    from lore.sessions.why import explain, render_why

    for number, message in enumerate(messages, start=start):
        print()
        print(render_message(number, message, lore.zone))
        if why and message["role"] == "assistant" and message.get("content"):
            explained = explain(lore.memory, scope, number, message, lore.zone)
            print("    " + render_why(explained).replace("\n", "\n    "))


def _with_why(lore: Runtime, scope: str, start: int, messages: list[Message]) -> list[Message]:
    """Each reply's `why` as `explain` gives it: memories with their text as it is now."""
    from lore.sessions.why import explain

    shown = []
    for number, message in enumerate(messages, start=start):
        if message["role"] == "assistant" and message.get("content"):
            message = {**message, "why": explain(lore.memory, scope, number, message, lore.zone)}
        shown.append(message)
    return shown


def _show(args: argparse.Namespace) -> int:
    from lore.errors import SessionError
    from lore.sessions.tools import Page
    from lore.text import counted

    lore = load_runtime(args)
    archive = lore.sessions.archive
    wanted = args.session_id.strip().lower()
    if not wanted:
        raise SessionError("a session id is needed; see `lore sessions list`")
    if wanted == "live":
        return _show_live_of(lore, args, TERMINAL_KEY)
    if ":" in wanted:  # a conversation's key: keys keep their case (line:group:C4af…)
        return _show_live_of(lore, args, args.session_id.strip())
    matches = [e for e in archive.entries() if e.session_id.startswith(wanted)]
    if not matches:
        return _show_live(lore, args, wanted)
    if len(matches) > 1:
        ids = ", ".join(e.session_id[:12] for e in matches[:5])
        raise SessionError(f"session id {quoted(args.session_id)} is ambiguous ({ids})")
    entry = matches[0]
    start = args.offset if args.offset >= 0 else max(entry.message_count + args.offset, 0)
    messages, total = archive.read_messages(entry, offset=start, limit=args.limit or None)
    if args.json:
        messages = _with_why(lore, entry.key, start, messages) if args.why else messages
        print_json({"session": entry.to_dict(), "offset": start, "messages": messages})
        return 0
    page = Page(start, messages)
    count = counted(total, "message")
    print(f"Session {entry.session_id} · {entry.key} · {entry.slug} · {count}")
    print(f"transcript: {entry.transcript_path}")
    print(f"summary:    {entry.memory_path or '(' + entry.summary + ')'}")
    _print_messages(lore, entry.key, page.start, list(page.messages), why=args.why)
    return 0
