"""`lore backup FILE` and `lore restore FILE`: the whole home in one verified archive."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lore.cli.common import add_common

__all__ = ["register"]


def register(subparsers: Any) -> None:
    backup: argparse.ArgumentParser = subparsers.add_parser(
        "backup",
        help="write lore.db, the workspace, the sessions and config.toml to one archive",
        description="Write a tar.gz of the database (SQLite online backup: safe while Lore "
        "runs), workspace/ (with its git history), sessions/ and config.toml, with a "
        "manifest of sha256 checksums; it is read back and checked before it is kept. "
        "config.toml may hold API keys: keep the file private.",
    )
    backup.add_argument("file", metavar="FILE", help="the archive to write (e.g. lore.tar.gz)")
    add_common(backup)
    backup.set_defaults(func=_backup)

    restore: argparse.ArgumentParser = subparsers.add_parser(
        "restore",
        help="put a backup in place as Lore's home, after checking every file",
        description="Check every file of the archive against its manifest, then make it "
        "Lore's home. A home that is not empty is refused; with --force it is moved aside "
        "(HOME.before-restore-STAMP), never deleted.",
    )
    restore.add_argument("file", metavar="FILE", help="an archive written by `lore backup`")
    restore.add_argument(
        "--force", action="store_true", help="move a non-empty home aside and restore"
    )
    add_common(restore)
    restore.set_defaults(func=_restore)


def _home(args: argparse.Namespace) -> Path:
    from lore.config import load_config

    return load_config(flags={"home": args.home, "model": args.model}).home


def _backup(args: argparse.Namespace) -> int:
    from lore.backends.local.backup import backup
    from lore.text import counted

    report = backup(_home(args), Path(args.file))
    files = counted(report.files, "file")
    print(f"Backed up {files} to {report.path} ({report.size:,} bytes, verified).")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from lore.backends.local.backup import restore

    home = _home(args)
    report = restore(Path(args.file), home, force=args.force)
    print(f"Restored {report.files} files from {report.path} into {home} (verified).")
    if report.kept_aside is not None:
        print(f"The home as it was is kept in {report.kept_aside}.")
    return 0
