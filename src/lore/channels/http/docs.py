"""The gateway's interactive docs (`/docs`) and its OpenAPI schema (`/openapi.json`),
behind the token like every endpoint but `/health`: they list every route and what it
takes. The page's login cookie opens them in a browser; a program sends its token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from lore.channels.http.auth import Client
from lore.channels.http.context import caller

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
Caller = Annotated[Client, Depends(caller)]


@router.get("/openapi.json")
async def openapi(request: Request, client: Caller) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get("/docs")
async def docs(request: Request, client: Caller) -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{request.app.title} API")
