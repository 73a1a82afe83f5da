"""One SQLite connection for `lore.db`: WAL mode, migrations on open, nestable `atomic()`.

Stores (`memory/store.py`, `reminders/store.py`, ...) own their tables' SQL and use
this class for the connection and transactions; nothing else runs SQL.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from lore.errors import DiskFullError, StoreError
from lore.files import disk_is_full

__all__ = [
    "SQLITE_HEADER",
    "Database",
    "damaged_database_error",
    "full_disk_error",
    "migrations",
]

SQLITE_HEADER = b"SQLite format 3\x00"


def migrations() -> list[tuple[int, str, ModuleType]]:
    """Every migration module in `lore.backends.local.migrations`, ordered by number."""
    import lore.backends.local.migrations as package

    found = []
    for info in pkgutil.iter_modules(package.__path__):
        name = info.name
        if not (name.startswith("m") and name[1:4].isdigit() and name[4:5] == "_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{name}")
        found.append((int(name[1:4]), name, module))
    found.sort()
    numbers = [n for n, _, _ in found]
    if len(numbers) != len(set(numbers)):
        raise StoreError(f"two migrations share a number: {numbers}")
    return found


class Database:
    """The connection to `lore.db`. Use `atomic()` for every write."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else path
        if isinstance(self.path, Path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _refuse_foreign_file(self.path)
            _create_if_missing(self.path)
        try:
            self.conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {path}: {exc}") from exc
        self.conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            # Deleted text is overwritten, not left in free pages: forget must erase.
            self.conn.execute("PRAGMA secure_delete=ON")
            self.conn.execute("PRAGMA busy_timeout=30000")
            self._migrate()
        except DiskFullError:
            self.conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            full = full_disk_error(exc, self.path)
            if full is not None:
                raise full from exc
            raise StoreError(
                f"{path} is not a usable Lore database ({exc}); "
                "run `lore doctor` to check it and recover what can be read"
            ) from exc

    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        current = self.schema_version
        for number, _name, module in migrations():
            if number <= current:
                continue
            with self.atomic(immediate=True):
                # Another process may have migrated while we waited for the lock.
                if self.schema_version >= number:
                    continue
                apply = getattr(module, "apply", None)
                if apply is not None:
                    apply(self.conn)
                else:
                    for statement in _split_sql(module.SQL):
                        self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def atomic(self, *, immediate: bool = True) -> Iterator[sqlite3.Connection]:
        """A transaction; nested calls become savepoints. Rolls back on any exception."""
        with self._lock:
            depth = self._depth
            if depth == 0:
                self.conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            else:
                self.conn.execute(f"SAVEPOINT sp{depth}")
            self._depth += 1
            try:
                yield self.conn
            except BaseException as exc:
                self._depth -= 1
                full = full_disk_error(exc, self.path)
                if full is not None and not self.conn.in_transaction:
                    pass  # SQLite already rolled the whole transaction back
                elif depth == 0:
                    self.conn.execute("ROLLBACK")
                else:
                    self.conn.execute(f"ROLLBACK TO sp{depth}")
                    self.conn.execute(f"RELEASE sp{depth}")
                if full is not None:
                    raise full from exc
                raise
            else:
                self._depth -= 1
                if depth == 0:
                    try:
                        self.conn.execute("COMMIT")
                    except sqlite3.Error as exc:
                        full = full_disk_error(exc, self.path)
                        if full is None:
                            raise
                        if self.conn.in_transaction:
                            self.conn.execute("ROLLBACK")
                        raise full from exc
                else:
                    self.conn.execute(f"RELEASE sp{depth}")

    def checkpoint(self) -> None:
        """Fold the WAL into the main file and truncate it (used after erasing text)."""
        with self._lock:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def backup_to(self, path: Path) -> None:
        """A consistent copy of the whole database at `path`, made while others may be
        writing (SQLite's online backup), then checked page by page."""
        target = sqlite3.connect(str(path))
        try:
            with self._lock:
                self.conn.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            problems = [str(row[0]) for row in target.execute("PRAGMA integrity_check")]
        finally:
            target.close()
        if problems != ["ok"]:
            raise StoreError(f"the database copy failed its integrity check: {problems[0]}")

    def vacuum(self) -> bool:
        """Rewrite the file without free pages, then empty the WAL: after erasing text,
        no old copy of it stays on disk. False if another connection kept the WAL busy."""
        with self._lock:
            self.conn.execute("VACUUM")
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return not busy

    def close(self) -> None:
        with self._lock:
            self.conn.close()


def full_disk_error(exc: BaseException, path: Path | str | None) -> DiskFullError | None:
    """SQLite's "database or disk is full" (or an I/O error while the disk holding the
    database at `path` has no room left) as the full disk it is, never as damage."""
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return None
    primary = code & 0xFF
    if primary == sqlite3.SQLITE_FULL:
        return DiskFullError()
    if primary == sqlite3.SQLITE_IOERR and isinstance(path, Path) and disk_is_full(path):
        return DiskFullError()
    return None


def damaged_database_error(exc: sqlite3.DatabaseError, path: Path | None = None) -> StoreError:
    """The one line a user sees when SQLite reports a damaged or unusable database."""
    full = full_disk_error(exc, path)
    if full is not None:
        return full
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreError(f"the database is busy ({text}); try again in a moment")
    return StoreError(
        f"the database is damaged ({text}); run `lore doctor` to check it and recover "
        "what can be read"
    )


def _refuse_foreign_file(path: Path) -> None:
    """Never build a fresh database over a file that was there: an empty or foreign
    `lore.db` means the real one was lost, and silently starting over would hide it."""
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    how = "restore it with `lore restore BACKUP`, or move it aside to start with an empty one"
    if not header:
        raise StoreError(f"{path} is empty (0 bytes), so its memories are gone; {how}")
    if header != SQLITE_HEADER:
        raise StoreError(f"{path} is not a SQLite database; {how}")


def _create_if_missing(path: Path) -> None:
    """Create a new database file whole (header written) and link it into place, so no
    other process ever sees an empty `lore.db` that Lore itself is creating."""
    if path.exists():
        return
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{threading.get_ident()}")
    try:
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except OSError:
            # Another process created it first (use theirs), or the file system has no
            # hard links (SQLite then creates it in place, as it always did).
            pass
    except sqlite3.Error as exc:
        raise StoreError(f"cannot create database {path}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)


def _split_sql(script: str) -> list[str]:
    """Split a migration script into statements (triggers keep their inner semicolons)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
