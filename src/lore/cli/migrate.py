"""`lore migrate --to URL`: copy this home (lore.db, sessions, the history log) into an
empty PostgreSQL database; `lore migrate --from URL`: copy one back into this home."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lore.cli.common import add_common

if TYPE_CHECKING:
    from pathlib import Path

    from lore.backends.local.history import History
    from lore.backends.local.sessions import LocalSessions
    from lore.backends.postgres.copy import TableCopy
    from lore.config import Config

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "migrate",
        help="copy this home into PostgreSQL (--to), or PostgreSQL back into it (--from)",
        description=(
            "--to URL copies every memory (all versions, ids kept), the audit history,"
            " reminders, pending deliveries, live and archived sessions and the history log"
            " from this home into an empty PostgreSQL database; --from URL copies them back"
            " into this home, which must hold none. Each table is compared by row count and"
            " content hash. The workspace's files (SOUL.md, USER.md, MEMORY.md, notes) stay"
            " in the home either way; the search index rebuilds itself."
        ),
    )
    add_common(parser)
    way = parser.add_mutually_exclusive_group(required=True)
    way.add_argument("--to", metavar="URL", help="postgresql://user@host/db to copy into")
    way.add_argument("--from", dest="source", metavar="URL", help="postgresql://... to copy from")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lore.config import load_config, redact_url
    from lore.logs import configure_logging

    config = load_config(flags={"home": getattr(args, "home", None)})
    # The connection pool warns on every failed attempt: to lore.log, not the terminal.
    configure_logging(config.home, rotation=config.log)
    if args.to:
        report = _to_postgres(config.home, args.to)
        print(f"copied {config.home} into {redact_url(args.to)}")
    else:
        report = _from_postgres(config.home, args.source)
        print(f"copied {redact_url(args.source)} into {config.home}")
    for table in report:
        print(
            f"  {table.table:<13} {table.source_rows:>8} rows  sha256 {table.source_hash}"
            f"  →  {table.target_rows:>8} rows  sha256 {table.target_hash}  same"
        )
    if args.to:
        print("Now set database_url (or LORE_DATABASE_URL) to this URL.")
    else:
        print("Now remove database_url (and LORE_DATABASE_URL) to use this home's own files.")
    return 0


def _to_postgres(home: Path, url: str) -> list[TableCopy]:
    from lore.backends.local.database import Database
    from lore.backends.postgres.backend import PostgresBackend
    from lore.backends.postgres.conversation_copy import copy_history, copy_sessions
    from lore.backends.postgres.copy import copy_sqlite
    from lore.backends.postgres.sessions import PostgresSessions
    from lore.config import load_config
    from lore.errors import StoreError

    config = load_config(flags={"home": str(home)})
    if not config.db_path.exists():
        raise StoreError(f"there is no {config.db_path} to copy")
    sessions, history = _local_home(config)
    source = Database(config.db_path)
    try:
        target = PostgresBackend(url)
        try:
            with target.db.atomic():  # one transaction: all of it, or nothing at all
                report = copy_sqlite(source, target.db)
                shared = PostgresSessions(target.db, target.locks)
                report += copy_sessions(sessions, sessions.archive, shared, shared.archive)
                report.append(copy_history(history, target.history))
        finally:
            target.close()
    finally:
        source.close()
    return report


def _from_postgres(home: Path, url: str) -> list[TableCopy]:
    from lore.backends.local.database import Database
    from lore.backends.postgres.backend import PostgresBackend
    from lore.backends.postgres.conversation_copy import copy_history, copy_sessions
    from lore.backends.postgres.copy_back import copy_to_sqlite
    from lore.backends.postgres.sessions import PostgresSessions
    from lore.config import load_config
    from lore.errors import StoreError

    config = load_config(flags={"home": str(home)})
    source = PostgresBackend(url)
    try:
        sessions, history = _local_home(config)
        if sessions.live_keys() or sessions.archive.entries() or history.entries(limit=1):
            raise StoreError(f"{config.home} already holds sessions; copy into an empty home")
        target = Database(config.db_path)
        try:
            with target.atomic():  # lore.db all or nothing (files are written after it)
                report = copy_to_sqlite(source.db, target)
                shared = PostgresSessions(source.db, source.locks)
                report += copy_sessions(shared, shared.archive, sessions, sessions.archive)
                report.append(copy_history(source.history, history))
        finally:
            target.close()
    finally:
        source.close()
    return report


def _local_home(config: Config) -> tuple[LocalSessions, History]:
    from lore.backends.local.history import History
    from lore.backends.local.sessions import LocalSessions

    return LocalSessions(config.sessions_dir, config.home), History(config.workspace / "memory")
