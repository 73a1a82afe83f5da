"""Imports over REST, the owner's token only: `POST /api/import` takes an export as a
multipart upload (`file`; a folder such as a nanobot workspace or an Obsidian vault as a
zip of it) and imports it as `lore import` does, `GET /api/imports` lists the imports,
`POST /api/imports/{id}/undo` removes one. An upload is at most `api.max_upload_mb`; a
larger export is for `lore import` on the machine itself."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Form, UploadFile

from lore.channels.http.auth import Forbidden
from lore.channels.http.memories_api import Scoped
from lore.errors import InvalidInputError
from lore.import_job import ImportDone, import_ledger, parse_since, run_import, run_undo
from lore.sessions.export_formats import SOURCES

if TYPE_CHECKING:
    from lore.runtime import Runtime

__all__ = ["import_upload", "router"]

router = APIRouter(prefix="/api", tags=["imports"])

_FOLDERS = ("nanobot", "openclaw", "markdown")  # sources read from a folder: sent zipped
_CHUNK = 1 << 20
_UNPACKED = 10  # a zip unpacks to at most this many times the upload cap


@router.post("/import")
async def import_export(
    access: Scoped,
    file: UploadFile,
    source: Annotated[str, Form(description=f"one of {', '.join(SOURCES)}")],
    dry_run: Annotated[bool, Form()] = False,
    since: Annotated[str | None, Form(description="YYYY-MM-DD: only what changed since")] = None,
) -> dict[str, Any]:
    """Import the uploaded export into `?scope=` (default: the owner's); the answer is
    what `lore import … --json` prints."""
    _owner(access)
    moment = parse_since(since, access.lore.zone)
    done = await import_upload(
        access.lore, file, source, scope=access.scope, since=moment, dry_run=dry_run
    )
    return done.to_dict()


@router.get("/imports")
async def list_imports(access: Scoped) -> dict[str, Any]:
    """The imports made, oldest first, as `lore import list --json` prints them."""
    _owner(access)
    records = await asyncio.to_thread(import_ledger(access.lore).records)
    return {"imports": [record.to_dict() for record in records]}


@router.post("/imports/{import_id}/undo")
async def undo(import_id: str, access: Scoped) -> dict[str, Any]:
    _owner(access)
    undone = await asyncio.to_thread(run_undo, access.lore, import_id)
    return {
        "id": undone.record.id,
        "sessions_removed": undone.sessions,
        "notes_removed": undone.notes,
        "memories_forgotten": undone.memories,
    }


async def import_upload(
    lore: Runtime,
    file: UploadFile,
    source: str,
    *,
    scope: str,
    since: datetime | None = None,
    dry_run: bool = False,
) -> ImportDone:
    """Save the upload beside Lore's home (a folder source unzipped), import it into
    `scope` in a thread, and remove the upload; an InvalidInputError, nothing written,
    when it cannot be read."""
    if source not in SOURCES:
        raise InvalidInputError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
    with tempfile.TemporaryDirectory(prefix="lore-import-", dir=lore.config.home) as tmp:
        upload = Path(tmp) / _name(file.filename)
        with upload.open("wb") as saved:
            while chunk := await file.read(_CHUNK):
                saved.write(chunk)
        cap = lore.config.api.max_upload_mb * 2**20 * _UNPACKED
        path = (
            await asyncio.to_thread(_unpacked, upload, source, cap)
            if source in _FOLDERS
            else upload
        )
        return await asyncio.to_thread(
            run_import, lore, source, path, scope=scope, since=since, dry_run=dry_run
        )


def _owner(access: Scoped) -> None:
    if not access.client.is_owner:
        raise Forbidden("imports are the owner's: use the owner's token")


def _name(filename: str | None) -> str:
    """The upload's own name, without any folder in it (never a path to write to)."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    return name if name not in ("", ".", "..") else "export"


def _unpacked(upload: Path, source: str, cap: int) -> Path:
    """The folder a zipped workspace or vault holds, unpacked beside it: every member is
    checked to stay inside (no `../`, no absolute paths) and the whole to unpack to at
    most `cap` bytes before anything is written."""
    if not zipfile.is_zipfile(upload):
        raise InvalidInputError(f"a {source} import is a folder: send it as a zip of that folder")
    target = upload.parent / "unpacked"
    with zipfile.ZipFile(upload) as archive:
        if sum(member.file_size for member in archive.infolist()) > cap:
            raise InvalidInputError(f"the zip unpacks to more than {cap // 2**20} MB")
        for member in archive.infolist():
            parts = PurePosixPath(member.filename.replace("\\", "/")).parts
            if member.filename.startswith(("/", "\\")) or ".." in parts or ":" in member.filename:
                raise InvalidInputError(f"the zip holds an unsafe path: {member.filename!r}")
        for member in archive.infolist():
            if member.is_dir():
                continue
            destination = target.joinpath(*PurePosixPath(member.filename).parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as packed, destination.open("wb") as out:
                shutil.copyfileobj(packed, out)
    entries = [p for p in target.iterdir()] if target.exists() else []
    # A zip of the folder itself holds one folder: that is the workspace.
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target
