"""`lore memory list|add|forget|search|export|import`: structured memories of one scope."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from lore.cli.common import (
    DEFAULT_SESSION,
    add_scoped,
    number_argument,
    print_json,
    runtime,
    show_usage,
)
from lore.cli.forget import add_everywhere_flags, forget_everywhere
from lore.errors import quoted

if TYPE_CHECKING:
    from lore.ports.memories import Memory
    from lore.runtime import Runtime

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "memory",
        help="list, add, forget, search, export or import memories",
        description="Structured long-term memories of one conversation (--session/--scope).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser("list", help="a conversation's active memories, block order")
    add_scoped(listing, json_flag=True)
    listing.set_defaults(func=_list)

    add = actions.add_parser("add", help="note a fact (at most 500 characters)")
    add.add_argument("text", metavar="TEXT", help="the fact, one self-contained sentence")
    add.add_argument(
        "--kind",
        default="fact",
        help="profile, preference, fact (default), plan, relation or event",
    )
    add.add_argument(
        "--keyword",
        action="append",
        default=[],
        metavar="WORD",
        help="a synonym or broader term that should also find it (repeatable)",
    )
    add.add_argument(
        "--expires", metavar="DATE", help="last day it applies (YYYY-MM-DD) or an ISO-8601 time"
    )
    add_scoped(add, json_flag=True)
    add.set_defaults(func=_add)

    forget = actions.add_parser("forget", help="erase a memory and its history by id")
    forget.add_argument("id", nargs="?", metavar="ID", help="the memory's number (e.g. 12 or #12)")
    forget.add_argument(
        "--all",
        action="store_true",
        help="erase every memory of the conversation (--scope), e.g. of a group Lore left",
    )
    forget.add_argument(
        "--author",
        metavar="NAME",
        help="every memory NAME noted, in every conversation (or only --scope's); shows "
        "them, --yes erases",
    )
    add_everywhere_flags(forget)
    add_scoped(forget, json_flag=True)
    forget.set_defaults(func=_forget, session=None)  # None: --author's every conversation

    search = actions.add_parser(
        "search",
        help="search memories, notes and archived sessions of one scope (any language)",
        description="Hybrid search (words and meaning) over this conversation's memories, "
        "notes and archived sessions: the same search as the model's memory_search tool.",
    )
    search.add_argument("query", metavar="QUERY")
    search.add_argument(
        "--limit", type=_limit, default=10, help="at most this many, 1-100 (default 10)"
    )
    search.add_argument(
        "--when", metavar="SPAN", help="only what was said then: 'last week', 2023-05, 上个月"
    )
    search.add_argument("--after", metavar="TIME", help="only from this date or phrase on")
    search.add_argument("--before", metavar="TIME", help="only before this date or phrase")
    add_scoped(search, json_flag=True)
    search.set_defaults(func=_search)

    export = actions.add_parser("export", help="write active memories as JSON Lines")
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    export.add_argument(
        "--author",
        metavar="NAME",
        help="only one person's data: what NAME noted and what names them, in every "
        "conversation (or only --scope's)",
    )
    add_scoped(export, json_flag=True)
    export.set_defaults(func=_export, session=None)  # None: cli:default, or --author's all

    imports = actions.add_parser(
        "import",
        help="read JSON Lines from `export`; all or nothing",
        description="Read memories written by `lore memory export` (all or nothing), then "
        "index them for search and embed them, with a progress bar.",
    )
    imports.add_argument("file", metavar="FILE", help="a file written by export (- for stdin)")
    imports.add_argument(
        "--no-vectors",
        action="store_true",
        help="index the text only; `lore serve` or `lore index rebuild` embeds later",
    )
    add_scoped(imports, json_flag=True)
    imports.set_defaults(func=_import)

    parser.set_defaults(func=lambda args: show_usage(parser))


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a number between 1 and 100, not {quoted(text)}")
    return value


def _list(args: argparse.Namespace) -> int:
    with runtime(args) as lore:
        memories = lore.memory.active(args.session, now=lore.clock.now())
        if args.json:
            print_json([m.to_record() for m in memories])
        elif not memories:
            print(f"No memories in {args.session}.")
        else:
            for memory in memories:
                print(_line(memory, lore))
    return 0


def _add(args: argparse.Namespace) -> int:
    with runtime(args) as lore:
        now = lore.clock.now()
        expires = None if args.expires is None else _parse_expiry(args.expires, lore, now)
        memory, created = lore.memory.remember(
            args.session,
            args.text,
            kind=args.kind,
            keywords=args.keyword,
            author=lore.config.user_name,
            via="cli",
            now=now,
            expires_at=expires,
        )
        if args.json:
            print_json({**memory.to_record(), "created": created})
        elif created:
            print(f"Noted #{memory.id}: {memory.content}")
        else:
            print(f"Already noted as #{memory.id}; nothing changed.")
    return 0


def _forget(args: argparse.Namespace) -> int:
    from lore.core.forgetting import KEPT_IN_TRANSCRIPT, forget_memory
    from lore.errors import InvalidInputError

    if args.author is not None:
        if args.id is not None or args.all or args.everywhere:
            raise InvalidInputError(
                "--author erases what one person noted: give no ID, --all or --everywhere"
            )
        return _forget_author(args)
    args.session = args.session or DEFAULT_SESSION
    if args.all:
        if args.id is not None or args.everywhere:
            raise InvalidInputError(
                "--all erases every memory of the scope: give no ID and no --everywhere"
            )
        return _forget_all(args)
    if args.id is None:
        raise InvalidInputError("give the memory's number (see `lore memory list`), or --all")
    if args.everywhere:
        return forget_everywhere(args, args.id, None)
    memory_id = number_argument(args.id, "memory", "lore memory list")
    with runtime(args) as lore:
        erased = forget_memory(
            lore,
            args.session,
            memory_id,
            by=lore.config.user_name,
            via="cli",
            now=lore.clock.now(),
        )
    if args.json:
        print_json({"forgotten": memory_id, "erased_versions": erased})
        return 0
    older = f" and {len(erased) - 1} older version(s)" if len(erased) > 1 else ""
    print(f"Forgot #{memory_id}{older}. {KEPT_IN_TRANSCRIPT}")
    return 0


def _forget_all(args: argparse.Namespace) -> int:
    """Every memory of one scope, expired ones too, with their versions and audit text."""
    import json

    from lore.core.forgetting import forget_memory
    from lore.errors import NotFoundError

    with runtime(args) as lore:
        now = lore.clock.now()
        ids = [int(json.loads(line)["id"]) for line in lore.memory.export(args.session)]
        for memory_id in ids:
            # One at a time, as every surface forgets, so search drops what restated each.
            try:
                forget_memory(
                    lore, args.session, memory_id, by=lore.config.user_name, via="cli", now=now
                )
            except NotFoundError:  # an older version, erased with the one that replaced it
                continue
    if args.json:
        print_json({"forgotten": ids})
    else:
        print(f"Forgot {len(ids)} memories of {args.session}.")
    return 0


def _forget_author(args: argparse.Namespace) -> int:
    """What one person noted, in one conversation (--scope) or in every one: shown first,
    erased with --yes."""
    from lore.core.forgetting import KEPT_IN_TRANSCRIPT
    from lore.errors import InvalidInputError
    from lore.memory.persons import forget_noted_by, kept_of, memories

    person = args.author.strip()
    if not person:
        raise InvalidInputError("--author needs a name (as `lore memory list` shows it)")
    with runtime(args) as lore:
        now = lore.clock.now()
        scopes = [args.session] if args.session else lore.memory.scopes()
        found = {scope: kept_of(lore.memory, scope, person) for scope in scopes}
        found = {scope: mine for scope, mine in found.items() if mine}
        forgotten: dict[str, list[int]] = {}
        if args.yes:
            for scope, mine in found.items():
                forgotten[scope] = forget_noted_by(
                    lore, scope, [m.id for m in mine], person,
                    by=lore.config.user_name, via="cli", now=now,
                )  # fmt: skip
        where = f"in {args.session}" if args.session else "in any conversation"
        if args.json:
            chosen = forgotten if args.yes else {k: [m.id for m in v] for k, v in found.items()}
            ids = [memory_id for scope in chosen for memory_id in chosen[scope]]
            key = "forgotten" if args.yes else "would_forget"
            print_json({key: ids, "by_scope": chosen})
            return 0
        total = sum(len(mine) for mine in found.values())
        if not found:
            print(f"No memories noted by {person} {where}.")
        elif args.yes:
            done = sum(len(ids) for ids in forgotten.values())
            where = _places(list(found))
            print(f"Forgot {memories(done)} noted by {person} {where}. {KEPT_IN_TRANSCRIPT}")
        else:
            print(f"{memories(total)} noted by {person} {_places(list(found))}:")
            for scope, mine in found.items():
                if not args.session:
                    print(f"  {scope}:")
                for memory in mine:
                    print(f"{'    ' if not args.session else '  '}{_line(memory, lore)}")
            print("Run again with --yes to forget them.")
    return 0


def _places(scopes: list[str]) -> str:
    if len(scopes) == 1:
        return f"in {scopes[0]}"
    return f"in {len(scopes)} conversations"


def _search(args: argparse.Namespace) -> int:
    from lore.errors import InvalidInputError
    from lore.search import format_hits, searcher
    from lore.search.timespan import time_range

    if not args.query.strip():
        raise InvalidInputError("a search needs some words")
    with runtime(args) as lore:
        now = lore.clock.now()
        after, before, span = time_range(
            when=args.when, after=args.after, before=args.before, now=now, zone=lore.zone
        )
        # The same hybrid search as the model's memory_search: memories, notes and
        # archived sessions of this conversation, by words and by meaning.
        hits = searcher(lore).search(
            args.query,
            args.session,
            limit=args.limit,
            embed_first=256,
            now=now,
            after=after,
            before=before,
            about=span,
        )
        if args.json:
            print_json([hit.to_dict(args.query) for hit in hits])
        elif not hits:
            print(f"Nothing found for {args.query!r} in {args.session}.")
        else:
            print(format_hits(hits, args.query, lore.zone))
    return 0


def _export(args: argparse.Namespace) -> int:
    from lore.errors import InvalidInputError

    if args.author is not None and not args.author.strip():
        raise InvalidInputError("--author needs a name (as `lore memory list` shows it)")
    everywhere = args.author is not None and args.session is None
    args.session = args.session or DEFAULT_SESSION
    with runtime(args) as lore:
        if everywhere:  # one person's data: theirs in every conversation, each line's named
            lines = [
                _with_scope(line, scope)
                for scope in lore.memory.scopes()
                for line in _of_person(lore, scope, lore.memory.export(scope), args.author)
            ]
        else:
            lines = lore.memory.export(args.session)
            if args.author is not None:
                lines = _of_person(lore, args.session, lines, args.author)
    if args.json:  # one JSON array instead of JSON Lines
        import json

        text = json.dumps([json.loads(line) for line in lines], ensure_ascii=False, indent=2)
        text += "\n"
    else:
        text = "".join(line + "\n" for line in lines)
    if args.output:
        from pathlib import Path

        Path(args.output).write_text(text, encoding="utf-8")
        print(f"Exported {len(lines)} memories to {args.output}.", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _with_scope(line: str, scope: str) -> str:
    import json

    return json.dumps({"scope": scope, **json.loads(line)}, ensure_ascii=False)


def _of_person(lore: Runtime, scope: str, lines: list[str], person: str) -> list[str]:
    """The export lines of the memories `person` noted or that name them."""
    import json

    from lore.memory.persons import names, noted_by

    kept = []
    for line in lines:
        memory = lore.memory.get(scope, int(json.loads(line)["id"]))
        if noted_by(memory, person) or names(memory, person):
            kept.append(line)
    return kept


def _import(args: argparse.Namespace) -> int:
    from lore.errors import InvalidInputError

    try:
        if args.file == "-":
            lines = sys.stdin.read().removeprefix("\ufeff").splitlines()
        else:
            # utf-8-sig: an export re-saved by an editor may start with a byte order mark.
            with open(args.file, encoding="utf-8-sig") as handle:
                lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {args.file}: {exc}") from None
    with runtime(args) as lore:
        result = lore.memory.import_(
            args.session, lines, by=lore.config.user_name, via="cli", now=lore.clock.now()
        )
        if result.added:
            _index_imported(lore, vectors=not args.no_vectors)
    if args.json:
        print_json({"added": result.added, "already_present": result.already_present})
    else:
        present = (
            f" ({len(result.already_present)} already present)" if result.already_present else ""
        )
        print(f"Imported {len(result.added)} memories{present}.")
    return 0


def _index_imported(lore: Runtime, *, vectors: bool) -> None:
    """What an import added is searchable when it returns: its words at once, its meaning
    too unless `vectors` is off (embedding takes a while: a progress bar shows it)."""
    from lore.search import searcher
    from lore.search.rebuild import REBUILD_BATCH, Progress

    search = searcher(lore)
    search.refresh(files=False)
    if not vectors:
        return
    index = search.index
    progress = Progress(index.pending_vectors(), "embedding", stream=sys.stderr)
    index.embed_pending(batch=REBUILD_BATCH, progress=progress.advance)
    progress.close()


def _line(memory: Memory, lore: Runtime) -> str:
    date = f"{memory.updated_at.astimezone(lore.zone):%Y-%m-%d}"
    line = f"#{memory.id} [{memory.kind}] {memory.content} (noted by {memory.author}, {date})"
    if memory.keywords:
        line += f"  keywords: {', '.join(memory.keywords)}"
    return line


def _parse_expiry(text: str, lore: Runtime, now: datetime) -> datetime:
    from lore.errors import InvalidInputError

    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInputError(f"--expires {quoted(text)}: use YYYY-MM-DD or ISO 8601") from None
    if len(text.strip()) == 10:  # a date: it applies through that whole local day
        moment = moment + timedelta(days=1)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=lore.zone)
    if moment <= now:
        # Stored, it would never be shown: say so instead of "Noted".
        raise InvalidInputError(f"--expires {quoted(text)} is already past")
    return moment
