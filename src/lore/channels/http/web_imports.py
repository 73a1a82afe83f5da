"""The web page's "Import history" card, the owner's only: upload an export into the
page's conversation and see what it brought (or the one line saying why not), list the
imports with an Undo button, and agree to extraction (what it would send, to which
model) with its progress and a Pause button; `lore serve`'s background runs the job."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, Response

from lore.channels.http.auth import Client, Forbidden
from lore.channels.http.context import gateway
from lore.channels.http.import_card import imports_context
from lore.channels.http.imports_api import import_upload
from lore.channels.http.web import Caller, Scope, _access, _render
from lore.errors import InvalidInputError, LoreError
from lore.import_extraction import extractor, pause, queue
from lore.import_job import ImportDone, run_undo

if TYPE_CHECKING:
    pass

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

Change = Callable[[str], Awaitable[ImportDone | None]]  # given the scope: the upload's result


async def _card(
    request: Request, client: Client, scope: str | None, change: Change | None = None
) -> Response:
    """The owner's card after `change` (a refusal shown there, in one line)."""
    if not client.is_owner:
        raise Forbidden("imports are the owner's: log in with the owner's token")
    access = _access(request, client, scope)
    lore = gateway(request).lore
    done: ImportDone | None = None
    error = ""
    try:
        if change is not None:
            done = await change(access.scope)
    except LoreError as exc:
        error = (str(exc).splitlines() or [type(exc).__name__])[0]
    context = await asyncio.to_thread(imports_context, lore, done=done, error=error)
    return _render(request, "_imports.html", scope=access.scope, **context)


@router.get("/ui/imports", response_class=HTMLResponse)
async def imports(request: Request, client: Caller, scope: Scope = None) -> Response:
    return await _card(request, client, scope)


@router.post("/ui/import", response_class=HTMLResponse)
async def upload(
    request: Request,
    client: Caller,
    file: Annotated[UploadFile | None, File()] = None,
    source: Annotated[str, Form()] = "",
    scope: Scope = None,
) -> Response:
    lore = gateway(request).lore

    async def imported(into: str) -> ImportDone | None:
        if file is None or not file.filename:
            raise InvalidInputError("choose the export file to import")
        return await import_upload(lore, file, source, scope=into)

    return await _card(request, client, scope, imported)


@router.post("/ui/imports/{import_id}/undo", response_class=HTMLResponse)
async def undo(request: Request, import_id: str, client: Caller, scope: Scope = None) -> Response:
    lore = gateway(request).lore

    async def undone(_: str) -> None:
        await asyncio.to_thread(run_undo, lore, import_id)
        return None

    return await _card(request, client, scope, undone)


@router.post("/ui/imports/{import_id}/extract", response_class=HTMLResponse)
async def extract(
    request: Request, import_id: str, client: Caller, scope: Scope = None
) -> Response:
    lore = gateway(request).lore

    async def queued(_: str) -> None:
        if extractor(lore) is None:
            raise InvalidInputError("no extraction model is set: nothing can be extracted")
        await asyncio.to_thread(queue, lore, import_id)
        return None

    return await _card(request, client, scope, queued)


@router.post("/ui/imports/{import_id}/pause", response_class=HTMLResponse)
async def paused(request: Request, import_id: str, client: Caller, scope: Scope = None) -> Response:
    lore = gateway(request).lore

    async def stop(_: str) -> None:
        await asyncio.to_thread(pause, lore, import_id)
        return None

    return await _card(request, client, scope, stop)
