"""`lore doctor`: check the database and every transcript; `--repair` fixes what it can.

Checking changes nothing. Repairing keeps every damaged file: a damaged database is moved
aside as `lore.db.damaged-STAMP` after its readable rows were copied into a new
`lore.db`; a transcript whose metadata line broke is kept under `sessions/damaged/`. An
emptied or cut session index gets back the lines of the transcripts it lost.
Run it while no other Lore process is using this home.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.cli.common import add_common

__all__ = ["register"]

Say = Callable[[str], None]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="check the database and transcripts; --repair recovers what can be read",
        description="Run SQLite's integrity check on lore.db and read every transcript. "
        "With --repair: copy what can be read out of a damaged database into a new one "
        "(the damaged file is kept beside it), rebuild broken transcript metadata lines and "
        "the index lines of archived transcripts missing from sessions/_sessions.jsonl. "
        "Exits 1 when something is wrong and was not repaired.",
    )
    add_common(parser)
    parser.add_argument(
        "--repair", action="store_true", help="recover and repair (damaged files are kept)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object for a monitor: healthy, and each part's state and lines",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lore.config import load_config
    from lore.files import disk_is_full
    from lore.logs import configure_logging

    config = load_config(flags={"home": args.home, "model": args.model})
    configure_logging(config.home, rotation=config.log)
    report = _Report(quiet=args.json)
    full = disk_is_full(config.home)
    if full:
        # Not damage: every repair writes, so none is tried until there is room again.
        disk = report.part("disk")
        disk.ok = False
        disk.say(
            f"{FULL_DISK}: free some space and run `lore doctor` again "
            "(nothing was changed or repaired)"
        )
    repair = args.repair and not full
    database = report.part("database")
    database.ok = _database(config.db_path, repair=repair, say=database.say) and not full
    transcripts = report.part("transcripts")
    transcripts.ok = _transcripts(
        config.sessions_dir, config.home, repair=repair, say=transcripts.say
    )
    healthy = database.ok and transcripts.ok
    if args.json:
        print(
            json.dumps(
                report.as_json(healthy, disk_full=full, repaired=repair),
                ensure_ascii=False,
                indent=2,
            )
        )
    return 0 if healthy else 1


@dataclass
class _Part:
    name: str
    quiet: bool
    ok: bool = True
    lines: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.lines.append(line)
        if not self.quiet:
            print(line)


@dataclass
class _Report:
    """What doctor found, part by part: printed as it goes, or kept for `--json`."""

    quiet: bool
    parts: list[_Part] = field(default_factory=list)

    def part(self, name: str) -> _Part:
        found = _Part(name, self.quiet)
        self.parts.append(found)
        return found

    def as_json(self, healthy: bool, *, disk_full: bool, repaired: bool) -> dict[str, Any]:
        return {
            "healthy": healthy,
            "disk_full": disk_full,
            "repaired": repaired,
            "parts": {p.name: {"ok": p.ok, "lines": p.lines} for p in self.parts},
        }


FULL_DISK = "the disk holding LORE_HOME is full"


def _database(path: Path, *, repair: bool, say: Say) -> bool:
    from lore.backends.local import repair as db_repair
    from lore.text import counted

    health = db_repair.check(path)
    name = path.name
    if health.state == "missing":
        say(f"{name}: not created yet")
        return True
    if health.state == "ok":
        say(f"{name}: ok (integrity check passed)")
        return True
    if health.state == "full":
        say(f"{name}: cannot be opened to check while {FULL_DISK} (a full disk, not damage)")
        return False
    if health.state in ("empty", "foreign"):
        what = "is empty (0 bytes)" if health.state == "empty" else "is not a SQLite database"
        if not repair:
            say(
                f"{name}: {what}; restore a backup with `lore restore BACKUP`, or run "
                "`lore doctor --repair` to move it aside and start with an empty one"
            )
            return False
        kept = _move_aside(path)
        say(f"{name}: {what}; moved aside as {kept.name}; Lore starts with an empty one")
        return True
    count = len(health.problems)
    say(f"{name}: damaged ({counted(count, 'problem')}), first: {health.problems[0]}")
    if not repair:
        say(
            f"{name}: run `lore doctor --repair` to copy what can be read into a new "
            "database (the damaged file is kept)"
        )
        return False
    target = path.with_name(f".{name}.recovering")
    _remove_database_files(target)
    recovery = db_repair.recover(path, target)
    kept = _move_aside(path)
    target.rename(path)
    total = sum(recovery.copied.values())
    say(f"{name}: recovered {total} rows into a new {name}; the damaged file is {kept.name}")
    for table, count in recovery.copied.items():
        lost = recovery.lost.get(table, 0)
        say(f"  {table}: {count} rows" + (f" ({lost} unreadable)" if lost else ""))
    say("  run `lore index rebuild` to rebuild the search index")
    return True


def _transcripts(sessions_dir: Path, home: Path, *, repair: bool, say: Say) -> bool:
    from lore.backends.local import session_repair as transcripts
    from lore.text import counted

    damages = transcripts.scan(sessions_dir, home)
    missing = transcripts.unindexed(sessions_dir, home)
    if not damages and not missing:
        say("transcripts: ok")
        return True
    healthy = True
    untold = {found.path for found in missing if found.entry is None}
    for damage in damages:
        where = damage.path.relative_to(home).as_posix()
        if damage.what == "message":
            say(f"{where} line {damage.line}: unreadable message line (skipped when read)")
        elif damage.path in untold:
            if not repair:  # --repair names it below
                say(f"{where}: {transcripts.NO_INDEX_LINE}")
            healthy = False
        elif not repair:
            say(f"{where}: unreadable metadata line; `lore doctor --repair` rebuilds it")
            healthy = False
    rebuildable = len(missing) - len(untold)
    if rebuildable and not repair:
        index = (sessions_dir / "_sessions.jsonl").relative_to(home).as_posix()
        say(
            f"{index}: {counted(rebuildable, 'archived transcript')} missing from the index "
            "(hidden from `lore sessions list`); `lore doctor --repair` rebuilds their lines"
        )
        healthy = False
    if repair:
        for line in transcripts.repair_metadata(sessions_dir, home):
            say(line)
        for line in transcripts.rebuild_index(sessions_dir, home):
            say(line)
    return healthy


def _move_aside(path: Path) -> Path:
    """Rename the database (and its WAL, which belongs to it alone) out of the way."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    path.rename(kept)
    wal = path.with_name(f"{path.name}-wal")
    if wal.exists():
        wal.rename(kept.with_name(f"{kept.name}-wal"))
    path.with_name(f"{path.name}-shm").unlink(missing_ok=True)
    return kept


def _remove_database_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
