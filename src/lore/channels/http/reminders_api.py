"""Reminders over REST: list, add with a time phrase ("tomorrow 9am", "in 20 minutes",
"每天早上8点"), cancel. Each takes the conversation as `?scope=KEY`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from lore.channels.http.memories_api import Scoped

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["reminders"])


class NewReminder(BaseModel):
    text: str = Field(min_length=1, description="what to remind of")
    when: str | None = Field(None, description="a time phrase or ISO 8601 time")
    recurrence: str | None = Field(None, description="e.g. 'every day at 9', a cron line")


@router.get("/reminders")
async def list_reminders(
    access: Scoped, include_done: Annotated[bool, Query()] = False
) -> dict[str, Any]:
    """Pending reminders, soonest first (with `include_done`, delivered and cancelled too),
    and the occurrences that could not be delivered (failed, or waiting for a retry)."""
    return {
        "reminders": access.reminders(include_done=include_done),
        "undelivered": access.undelivered(),
    }


@router.post("/reminders", status_code=201)
async def add_reminder(new: NewReminder, access: Scoped) -> dict[str, Any]:
    return access.remind(new.text, new.when, new.recurrence)


@router.delete("/reminders/{reminder_id}")
async def cancel_reminder(reminder_id: int, access: Scoped) -> dict[str, Any]:
    return access.cancel_reminder(reminder_id)
