"""Sessions over REST: the live one and the closed ones, a transcript exactly as it was
kept, and a closed session's summary with the way back to its transcript."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from lore.channels.http.memories_api import Scoped

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["sessions"])


@router.get("/sessions")
async def list_sessions(access: Scoped) -> dict[str, Any]:
    return access.sessions()


@router.get("/sessions/{session_id}")
async def transcript(
    session_id: str,
    access: Scoped,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """A session's messages (`live` for the open one), tool calls and results included."""
    return access.transcript(session_id, offset=offset, limit=limit)


@router.get("/sessions/{session_id}/messages/{index}/why")
async def why(session_id: str, index: int, access: Scoped) -> dict[str, Any]:
    """What reply `index` rested on: memories (now: their text, or "forgotten"), search
    hits with their source and date, files read, skills loaded."""
    return access.why(session_id, index)


@router.get("/sessions/{session_id}/summary")
async def summary(session_id: str, access: Scoped) -> dict[str, Any]:
    return access.summary(session_id)
