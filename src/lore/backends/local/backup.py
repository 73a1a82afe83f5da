"""One-file backups of a Lore home: the database, the workspace, the sessions, the config.

`backup` copies `lore.db` with SQLite's online backup (safe while Lore runs), reads every
file of `workspace/` (its git history included), `sessions/`, `imports/` and `config.toml`
once, and writes them into one tar.gz with `manifest.json`: each member's size and sha256. The
archive is written beside its destination, read back and checked against the manifest,
and only then renamed into place. `restore` checks the same before it touches anything,
unpacks into a new directory next to the home and swaps it in; a home that is not empty
is refused unless forced, and then kept aside, never overwritten.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from lore.errors import InvalidInputError, LoreError
from lore.files import fsync_dir

__all__ = ["BackupReport", "backup", "read_verified", "restore"]

MANIFEST = "manifest.json"
FORMAT = "lore-backup"
_DIRECTORIES = ("workspace", "sessions", "imports")  # imports: what `lore import` made
_FILES = ("config.toml",)
_SKIPPED_SUFFIXES = (".lock", ".tmp", ".forget-tmp")


@dataclass(frozen=True)
class BackupReport:
    path: Path
    files: int
    size: int
    kept_aside: Path | None = None  # restore: the home as it was


def backup(home: Path, destination: Path) -> BackupReport:
    """Write a verified backup of `home` to `destination` (a new file)."""
    from lore.backends.local.database import Database

    if destination.exists():
        raise InvalidInputError(f"{destination} already exists; choose a new file name")
    if not home.exists():
        raise InvalidInputError(f"{home} does not exist: there is nothing to back up")
    destination.parent.mkdir(parents=True, exist_ok=True)
    members: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(dir=destination.parent, prefix=".lore-backup-") as scratch:
        if (home / "lore.db").exists():
            copy = Path(scratch) / "lore.db"
            db = Database(home / "lore.db")
            try:
                db.backup_to(copy)
            finally:
                db.close()
            members["lore.db"] = copy.read_bytes()
    for name in _FILES:
        if (home / name).is_file():
            members[name] = (home / name).read_bytes()
    for directory in _DIRECTORIES:
        for path in sorted((home / directory).rglob("*")):
            if (
                path.is_file()
                and not path.is_symlink()
                and not path.name.endswith(_SKIPPED_SUFFIXES)
            ):
                members[path.relative_to(home).as_posix()] = path.read_bytes()
    manifest = {
        "format": FORMAT,
        "version": 1,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": {
            name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            for name, data in members.items()
        },
    }
    tmp = destination.with_name(f".{destination.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # config.toml may hold keys
    with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        _add(tar, MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False).encode())
        for name, data in members.items():
            _add(tar, name, data)
        tar.close()
        raw.flush()
        os.fsync(raw.fileno())
    try:
        read_verified(tmp)
    except LoreError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, destination)
    fsync_dir(destination.parent)
    return BackupReport(destination, len(members), destination.stat().st_size)


def restore(source: Path, home: Path, *, force: bool = False) -> BackupReport:
    """Put the backup at `source` in place as `home`, after checking every file of it."""
    if not source.is_file():
        raise InvalidInputError(f"{source} is not a file")
    members = read_verified(source)
    occupied = home.exists() and any(home.iterdir())
    if occupied and not force:
        raise InvalidInputError(
            f"{home} is not empty; restore into an empty home, or add --force to move the "
            "current one aside first (it is kept, not deleted)"
        )
    home.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".{home.name}.restoring-"))
    try:
        for name, data in members.items():
            path = fresh / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        if (fresh / "config.toml").exists():
            (fresh / "config.toml").chmod(0o600)
        _check_database(fresh / "lore.db")
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    kept = None
    if home.exists():
        if occupied:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            kept = home.with_name(f"{home.name}.before-restore-{stamp}")
            os.replace(home, kept)
        else:
            home.rmdir()
    os.replace(fresh, home)
    fsync_dir(home.parent)
    return BackupReport(source, len(members), source.stat().st_size, kept)


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(datetime.now(UTC).timestamp())
    tar.addfile(info, io.BytesIO(data))


def read_verified(path: Path) -> dict[str, bytes]:
    """Every file of a backup, each checked against the manifest; refuses anything else."""
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            found: dict[str, bytes] = {}
            for info in tar:
                if not info.isfile() or not _safe(info.name):
                    raise InvalidInputError(f"{path} holds {info.name!r}, which no backup has")
                extracted = tar.extractfile(info)
                assert extracted is not None
                found[info.name] = extracted.read()
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise InvalidInputError(f"{path} is not a readable Lore backup ({exc})") from exc
    try:
        manifest = json.loads(found.pop(MANIFEST))
        files = manifest["files"]
        if manifest.get("format") != FORMAT or not isinstance(files, dict):
            raise ValueError("not a Lore backup manifest")
    except (KeyError, ValueError, TypeError) as exc:
        raise InvalidInputError(f"{path} has no valid manifest ({exc})") from exc
    if set(files) != set(found):
        missing = sorted(set(files) ^ set(found))
        raise InvalidInputError(f"{path} does not match its manifest: {missing[0]}")
    for name, data in found.items():
        if hashlib.sha256(data).hexdigest() != files[name].get("sha256"):
            raise InvalidInputError(f"{path} is damaged: {name} does not match its checksum")
    return found


def _safe(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(parts) and not name.startswith("/") and ".." not in parts


def _check_database(path: Path) -> None:
    from lore.backends.local.repair import check

    if path.exists() and not check(path).ok:
        raise InvalidInputError("the backup's lore.db fails its integrity check")
