"""Finding damaged transcript lines, rebuilding a broken metadata line, and indexing
archived transcripts the index lost.

Readers already skip a damaged message line (with a warning naming file and line); this
is what `lore doctor` reports and repairs. A transcript whose metadata line broke gets a
new one: an archived transcript from its index entry, a live session from its file name.
The file as it was is kept under `sessions/damaged/` first, so a repair never loses bytes.
An archived transcript missing from an emptied or cut `_sessions.jsonl` gets its index
line back from its own metadata line; one with neither is reported, never invented.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

from lore.backends.local.archive import SessionArchive, parse_message_line
from lore.backends.local.live import meta_line, new_session_id
from lore.files import atomic_write, locked_file
from lore.keys import key_to_filename
from lore.ports.sessions import ArchivedSession, SessionMeta
from lore.text import counted

__all__ = [
    "TranscriptDamage",
    "Unindexed",
    "rebuild_index",
    "repair_metadata",
    "scan",
    "unindexed",
]

UNKNOWN_KEY = "recovered:unknown"  # no channel owns it, so nothing leaks into a scope


@dataclass(frozen=True)
class TranscriptDamage:
    path: Path
    line: int
    what: str  # "metadata" | "message"
    live: bool


@dataclass(frozen=True)
class Unindexed:
    """An archived transcript the index does not list."""

    path: Path
    entry: ArchivedSession | None  # its index line, from its metadata; None: unreadable


def scan(sessions_dir: Path, home: Path) -> list[TranscriptDamage]:
    """Every unreadable line of every live and archived transcript."""
    archive = SessionArchive(sessions_dir, home)
    found: list[TranscriptDamage] = []
    for path in _live_files(sessions_dir):
        found.extend(_scan_file(path, live=True))
    for path in archive.transcripts():
        found.extend(_scan_file(path, live=False))
    return found


def unindexed(sessions_dir: Path, home: Path) -> list[Unindexed]:
    """Archived transcripts missing from the index (it was emptied or cut short), each
    with the index line its metadata line gives. Only files the index does not name are
    opened. A transcript of a session that is still live is not one: its close stopped
    midway, and the next chat start finishes it."""
    archive = SessionArchive(sessions_dir, home)
    indexed = archive.entries()
    ids = {entry.session_id for entry in indexed}
    names = {entry.transcript_path.rsplit("/", 1)[-1] for entry in indexed}
    found: list[Unindexed] = []
    for path in archive.transcripts():
        if path.name in names:
            continue
        data = archive.read_metadata(path)
        try:
            entry = None if data is None else ArchivedSession.from_dict(data)
        except (KeyError, TypeError, ValueError):
            entry = None
        if entry is None:
            found.append(Unindexed(path, None))
            continue
        if entry.session_id in ids or _still_live(sessions_dir, entry):
            continue
        # The file is where it is: its index line names it there.
        found.append(Unindexed(path, replace(entry, transcript_path=archive.relative(path))))
    return found


def rebuild_index(sessions_dir: Path, home: Path) -> list[str]:
    """Append the index line of every archived transcript missing from the index, from
    its own metadata line; one sentence for those rebuilt, one per transcript left."""
    archive = SessionArchive(sessions_dir, home)
    missing = unindexed(sessions_dir, home)
    entries = sorted(
        (found.entry for found in missing if found.entry is not None),
        key=lambda entry: entry.ended_at,
    )
    added = archive.index_missing(entries)
    done: list[str] = []
    if added:
        done.append(
            f"{archive.index_location}: rebuilt {counted(len(added), 'index line')} "
            "from the archived transcripts' metadata lines"
        )
    done.extend(
        f"{archive.relative(found.path)}: {NO_INDEX_LINE}" for found in missing if not found.entry
    )
    return done


NO_INDEX_LINE = (
    "not in the index and its metadata line is unreadable, so its session cannot be "
    "told; left as it is"
)


def repair_metadata(sessions_dir: Path, home: Path) -> list[str]:
    """Rebuild every broken metadata line; one sentence per file repaired. An archived
    transcript the index does not list has nothing to rebuild its line from: it is left
    as it is (`rebuild_index` names it)."""
    archive = SessionArchive(sessions_dir, home)
    by_path = {entry.transcript_path: entry for entry in archive.entries()}
    done: list[str] = []
    for damage in scan(sessions_dir, home):
        if damage.what != "metadata":
            continue
        entry = None if damage.live else by_path.get(archive.relative(damage.path))
        if not damage.live and entry is None:
            continue  # nothing to rebuild it from
        raw = damage.path.read_bytes()
        first, _, rest = raw.partition(b"\n")
        body = raw if parse_message_line(first) is not None else rest
        kept = _keep_aside(damage.path, sessions_dir)
        if damage.live:
            key = _key_from_filename(damage.path.name)
            meta = SessionMeta(new_session_id(), key, _now(), _now())
            with locked_file(sessions_dir / key_to_filename(key, ".lock")):
                atomic_write(damage.path, meta_line(meta) + body)
        elif entry is not None:
            header = {"_type": "metadata", **entry.to_dict()}
            key = entry.key
            header["metadata"] = {"last_consolidated": 0, "extra": {}}
            line = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
            atomic_write(damage.path, line + b"\n" + body)
        done.append(
            f"{archive.relative(damage.path)}: rebuilt its metadata line (session {key}); "
            f"the file as it was is kept as {archive.relative(kept)}"
        )
    return done


def _scan_file(path: Path, *, live: bool) -> list[TranscriptDamage]:
    found = []
    try:
        with path.open("rb") as f:
            first = f.readline()
            if not _is_metadata(first):
                found.append(TranscriptDamage(path, 1, "metadata", live))
            for number, raw in enumerate(f, start=2):
                if raw.endswith(b"\n") and raw.strip() and not _readable(raw):
                    found.append(TranscriptDamage(path, number, "message", live))
    except OSError:
        pass
    return found


def _still_live(sessions_dir: Path, entry: ArchivedSession) -> bool:
    try:
        with (sessions_dir / key_to_filename(entry.key)).open("rb") as f:
            data = json.loads(f.readline())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("session_id") == entry.session_id


def _readable(line: bytes) -> bool:
    """A message, or the mark a live session appends to flag one (unanswered, cancelled)."""
    if parse_message_line(line) is not None:
        return True
    try:
        data = json.loads(line)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("_type") == "mark"


def _is_metadata(line: bytes) -> bool:
    try:
        data = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and data.get("_type") == "metadata"
        and isinstance(data.get("session_id"), str)
        and isinstance(data.get("key"), str)
    )


def _live_files(sessions_dir: Path) -> list[Path]:
    if not sessions_dir.exists():
        return []
    return sorted(p for p in sessions_dir.glob("*.jsonl") if p.name != "_sessions.jsonl")


def _key_from_filename(name: str) -> str:
    stem = name.removesuffix(".jsonl")
    if "~" in stem:  # a long key kept only a hash of itself
        return UNKNOWN_KEY
    return unquote(stem)


def _keep_aside(path: Path, sessions_dir: Path) -> Path:
    directory = sessions_dir / "damaged"
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    kept = directory / f"{path.name}.{stamp}"
    shutil.copy2(path, kept)
    return kept


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
