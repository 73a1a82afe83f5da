"""The web page (placeholder)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

__all__ = ["mount_static", "router"]

router = APIRouter(include_in_schema=False)


def mount_static(app: FastAPI) -> None:
    return None
