"""Checking a `lore.db` and copying what can still be read out of a damaged one.

`check` runs SQLite's `integrity_check`. `recover` builds a new database with the current
schema and copies every readable row, table by table: when a damaged page breaks a scan,
it probes forward by rowid for the next readable row, so one bad page costs the rows on
it and no more. The search index is not copied (it is rebuilt from its sources), nor are
the per-scope counts (the memories' triggers keep them as the rows arrive).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lore.backends.local.database import SQLITE_HEADER, Database, full_disk_error
from lore.errors import StoreError

__all__ = ["DatabaseHealth", "Recovery", "check", "recover"]

# Derived from memories, notes and transcripts: `lore index rebuild` makes them again;
# the per-scope counts are kept by triggers as the memories are copied in.
_REBUILT = ("search_", "memory_fts", "memory_counts")
_MAX_PROBLEMS = 20


@dataclass(frozen=True)
class DatabaseHealth:
    state: str  # ok | empty | foreign | damaged | missing | full (the disk, not the file)
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.state in ("ok", "missing")


@dataclass
class Recovery:
    copied: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)  # rows refused or rowid gaps skipped
    unreadable: list[str] = field(default_factory=list)  # tables that gave nothing


def check(path: Path) -> DatabaseHealth:
    """How `path` looks to SQLite (never creates or changes it)."""
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return DatabaseHealth("missing")
    if not header:
        return DatabaseHealth("empty")
    if header != SQLITE_HEADER:
        return DatabaseHealth("foreign")
    try:
        conn = sqlite3.connect(str(path), isolation_level=None)
    except sqlite3.Error as exc:
        return _refused(exc, path)
    try:
        rows = conn.execute(f"PRAGMA integrity_check({_MAX_PROBLEMS})").fetchall()
        problems = tuple(str(row[0]) for row in rows)
    except sqlite3.DatabaseError as exc:
        return _refused(exc, path)
    finally:
        conn.close()
    if problems == ("ok",):
        return DatabaseHealth("ok")
    return DatabaseHealth("damaged", problems)


def _refused(exc: sqlite3.Error, path: Path) -> DatabaseHealth:
    """SQLite could not read the file: damage, unless the disk is full (opening a WAL
    database writes its shared-memory file, which a full disk refuses)."""
    if full_disk_error(exc, path) is not None:
        return DatabaseHealth("full", (str(exc),))
    return DatabaseHealth("damaged", (str(exc),))


def recover(source: Path, target: Path) -> Recovery:
    """Copy every readable row of `source` into a new database at `target`."""
    if target.exists():
        raise StoreError(f"{target} already exists; move it aside first")
    result = Recovery()
    fresh = Database(target)
    try:
        conn = sqlite3.connect(str(source), isolation_level=None)
    except sqlite3.Error as exc:
        fresh.close()
        raise StoreError(f"cannot open {source}: {exc}") from exc
    try:
        fresh.conn.execute("PRAGMA foreign_keys=OFF")  # rows arrive table by table
        for table in _tables(fresh.conn):
            if table.startswith(_REBUILT):
                continue
            columns = _common_columns(conn, fresh.conn, table)
            if not columns:
                result.unreadable.append(table)
                continue
            copied, lost = _copy_table(conn, fresh, table, columns)
            result.copied[table] = copied
            if lost:
                result.lost[table] = lost
        fresh.conn.execute("PRAGMA foreign_keys=ON")
        fresh.checkpoint()
    finally:
        conn.close()
        fresh.close()
    return result


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY rootpage"
    ).fetchall()
    return [str(row[0]) for row in rows]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    try:
        return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]
    except sqlite3.DatabaseError:
        return []


def _common_columns(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> list[str]:
    present = set(_columns(old, table))
    return [name for name in _columns(new, table) if name in present]


def _copy_table(
    old: sqlite3.Connection, fresh: Database, table: str, columns: list[str]
) -> tuple[int, int]:
    names = ", ".join(_quote(c) for c in columns)
    insert = (
        f"INSERT OR IGNORE INTO {_quote(table)} ({names}) VALUES "
        f"({', '.join('?' for _ in columns)})"
    )
    copied = lost = 0
    with fresh.atomic():
        for row in _readable_rows(old, table, names):
            try:
                cursor = fresh.conn.execute(insert, row)
            except sqlite3.Error:
                lost += 1
                continue
            if cursor.rowcount == 1:
                copied += 1
            else:
                lost += 1
    return copied, lost


def _readable_rows(old: sqlite3.Connection, table: str, names: str) -> Iterator[tuple[object, ...]]:
    """Rows in rowid order; past a damaged page, the next rowid that can be read."""
    after = -(2**63)
    stalled: int | None = None
    query = f"SELECT rowid, {names} FROM {_quote(table)} WHERE rowid > ? ORDER BY rowid"
    while True:
        try:
            for row in old.execute(query, (after,)):
                after = int(row[0])
                yield tuple(row[1:])
            return
        except sqlite3.DatabaseError:
            following = _next_readable(old, table, after)
            if following is None:
                return
            # Failing again without progress: that very row cannot be read; skip it.
            after = following if after == stalled else following - 1
            stalled = after


def _next_readable(old: sqlite3.Connection, table: str, after: int) -> int | None:
    step = 1
    probe = f"SELECT rowid FROM {_quote(table)} WHERE rowid >= ? ORDER BY rowid LIMIT 1"
    while after + step < 2**63:
        try:
            row = old.execute(probe, (after + step,)).fetchone()
        except sqlite3.DatabaseError:
            step *= 2
            continue
        if row is None:
            return None
        return int(row[0])
    return None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
