"""`lore migrate --to URL`: copy this home's lore.db into an empty PostgreSQL database."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "migrate",
        help="copy memories and reminders from lore.db into PostgreSQL",
        description=(
            "Copy every memory (all versions, ids kept), the audit history, reminders and"
            " pending deliveries from this home's lore.db into an empty PostgreSQL"
            " database, then compare each table's row count and content hash. Set"
            " database_url to the same URL afterwards; the search index rebuilds itself."
        ),
    )
    add_common(parser)
    parser.add_argument("--to", required=True, metavar="URL", help="postgresql://user@host/db")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lore.backends.local.database import Database
    from lore.backends.postgres.copy import copy_sqlite
    from lore.backends.postgres.database import PostgresDatabase
    from lore.config import load_config, redact_url
    from lore.errors import StoreError

    config = load_config(flags={"home": getattr(args, "home", None)})
    if not config.db_path.exists():
        raise StoreError(f"there is no {config.db_path} to copy")
    source = Database(config.db_path)
    try:
        target = PostgresDatabase(args.to)
        try:
            report = copy_sqlite(source, target)
        finally:
            target.close()
    finally:
        source.close()
    print(f"copied {config.db_path} into {redact_url(args.to)}")
    for table in report:
        print(
            f"  {table.table:<13} {table.source_rows:>8} rows  sha256 {table.source_hash}"
            f"  →  {table.target_rows:>8} rows  sha256 {table.target_hash}  same"
        )
    print("Now set database_url (or LORE_DATABASE_URL) to this URL.")
    return 0
