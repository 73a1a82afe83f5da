"""The memory REST API, in the shape mem0's server made familiar: list, add, get,
update, delete, history and search of one conversation's memories, plus export/import.

Every route takes the conversation as `?scope=KEY` (default: the client's own scope).
A memory is the same record `lore memory list --json` prints.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

from lore.channels.http.access import ScopeAccess, known_conversations, known_scopes
from lore.channels.http.auth import Client
from lore.channels.http.context import caller, gateway
from lore.errors import InvalidInputError

__all__ = ["router", "scoped"]

router = APIRouter(prefix="/api", tags=["memories"])

ScopeParam = Annotated[
    str | None, Query(description="conversation key, e.g. api:alice (default: the client's)")
]


def scoped(
    request: Request, client: Annotated[Client, Depends(caller)], scope: ScopeParam = None
) -> ScopeAccess:
    """The requested scope, once the caller is known to be allowed there."""
    return ScopeAccess.open(gateway(request).lore, client, scope)


Scoped = Annotated[ScopeAccess, Depends(scoped)]


class NewMemory(BaseModel):
    content: str = Field(min_length=1, description="one self-contained fact, ≤ 500 characters")
    kind: str = Field("fact", description="profile, preference, fact, plan, relation or event")
    keywords: list[str] = Field(default_factory=list)
    expires_at: datetime | None = Field(None, description="ISO 8601 with a time zone")
    author: str | None = Field(None, description="who noted it (another name: owner's token)")


class ChatMessage(BaseModel):
    role: Literal["user", "assistant", "system"]
    content: str


class Said(BaseModel):
    text: str | None = Field(None, description="what the user said")
    messages: list[ChatMessage] | None = Field(None, description="or an exchange, in order")
    author: str | None = Field(None, description="who said it (another name: owner's token)")


class ForgetRequest(BaseModel):
    id: int | None = Field(None, ge=1, description="the memory's number")
    phrase: str | None = Field(None, min_length=1, description="or a phrase only it holds")
    everywhere: bool = Field(False, description="also every copy under the home (owner)")


class MemoryChange(BaseModel):
    content: str = Field(min_length=1)
    kind: str | None = None
    keywords: list[str] | None = None


class MemoryQuery(BaseModel):
    query: str = Field(min_length=1)
    limit: int = Field(10, ge=1, le=100)


@router.get("/scopes", tags=["gateway"])
async def scopes(request: Request, client: Annotated[Client, Depends(caller)]) -> dict[str, Any]:
    """Conversations this token may open (with a live or closed session), and its default;
    `conversations` gives each with its name (a group's title, the other person's name)
    and the time of its last message."""
    lore = gateway(request).lore
    return {
        "default": client.default_scope,
        "scopes": known_scopes(lore, client),
        "conversations": known_conversations(lore, client),
        "all_scopes": client.is_owner,
    }


@router.get("/memories")
async def list_memories(
    access: Scoped, limit: Annotated[int | None, Query(ge=1, le=10_000)] = None
) -> dict[str, Any]:
    """Active memories in block order: profile first, then most recently updated."""
    return access.memories(limit=limit)


@router.post("/memories", status_code=201, response_model=None)
async def add_memory(new: NewMemory, access: Scoped) -> dict[str, Any] | JSONResponse:
    """Note a fact; an exact duplicate answers 200 with the memory already there."""
    if new.expires_at is not None and new.expires_at.tzinfo is None:
        raise InvalidInputError("expires_at needs a time zone, e.g. 2026-12-31T23:59:00+08:00")
    record, created = access.noted_by(new.author).remember(
        new.content, kind=new.kind, keywords=new.keywords, expires_at=new.expires_at
    )
    if not created:
        return JSONResponse({**record, "created": False}, status_code=200)
    return {**record, "created": True}


@router.post("/memories/add")
async def add_said(said: Said, access: Scoped) -> dict[str, Any]:
    """What was said (a text, or messages): the configured model extracts memories from
    it as after a turn (adds, corrections, deletions); without one, the text is kept."""
    if (said.text is None) == (said.messages is None):
        raise InvalidInputError("give text or messages (one of them)")
    content = said.text if said.text is not None else [m.model_dump() for m in said.messages or []]
    return await access.noted_by(said.author).add(content)


@router.post("/memories/forget")
async def forget_said(request: ForgetRequest, access: Scoped) -> dict[str, Any]:
    """Forget a memory by id or by a phrase only it holds (several: refused, naming them);
    with `everywhere`, every copy under the home too (the owner's token only)."""
    return await asyncio.to_thread(
        access.forget_named, request.id, request.phrase, everywhere=request.everywhere
    )


@router.get("/memories/block")
async def memory_block(access: Scoped) -> dict[str, Any]:
    """The memory block exactly as the model sees it in this conversation's next turn."""
    return access.block()


@router.post("/memories/search")
async def search_memories(query: MemoryQuery, access: Scoped) -> dict[str, Any]:
    """Active memories matching any word of the query (any language), best first."""
    # In a worker thread, as the model's memory_search: the loop serves everyone else.
    found = await asyncio.to_thread(access.search_memories, query.query, limit=query.limit)
    return {"results": found}


@router.get("/search", tags=["search"])
async def search_everything(
    access: Scoped,
    q: Annotated[str, Query(min_length=1, description="words or a question")],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    when: Annotated[str | None, Query(description="'last week', '2026-05', '上个月'")] = None,
) -> dict[str, Any]:
    """The model's memory_search: memories, notes and archived sessions, by words and meaning."""
    found = await asyncio.to_thread(access.search, q, limit=limit, when=when or None)
    return {"results": found}


@router.get("/memories/export", response_class=PlainTextResponse)
async def export_memories(access: Scoped) -> PlainTextResponse:
    """Active memories as JSON Lines, the format `lore memory import` reads."""
    text = "".join(line + "\n" for line in access.export())
    return PlainTextResponse(text, media_type="application/x-ndjson")


@router.post("/memories/import")
async def import_memories(request: Request, access: Scoped) -> dict[str, Any]:
    """Read an export (JSON Lines in the body) back; all or nothing."""
    raw = await request.body()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInputError("the body must be UTF-8 JSON Lines") from None
    return access.import_(text.splitlines())


@router.get("/memories/{memory_id}")
async def get_memory(memory_id: int, access: Scoped) -> dict[str, Any]:
    record = access.memory(memory_id)
    return {**record, "source_message": access.source_message(record)}


@router.put("/memories/{memory_id}")
async def update_memory(memory_id: int, change: MemoryChange, access: Scoped) -> dict[str, Any]:
    """Replace a memory with a new version (a new id); the old one stays in its history."""
    return access.update(memory_id, change.content, kind=change.kind, keywords=change.keywords)


@router.delete("/memories/{memory_id}")
async def delete_memory(memory_id: int, access: Scoped) -> dict[str, Any]:
    """Erase a memory and every earlier version of it, everywhere."""
    return {"erased": access.forget(memory_id)}


@router.get("/memories/{memory_id}/history")
async def memory_history(memory_id: int, access: Scoped) -> dict[str, Any]:
    """Every change to the memory's chain of versions, oldest first."""
    return {"history": access.history(memory_id)}
