"""The web page: see and fix what Lore remembers, with no build step.

Server-rendered Jinja2 and a vendored htmx (static/htmx.min.js, 2.0.11, 0BSD). Log in
with a token: that opens a log-in on the server, whose random id is the HttpOnly,
SameSite=Strict cookie (the token never is), and whose CSRF token every change the page
asks for carries (origin.py); no inline script, so the page's CSP allows none. Pick a
conversation; read its memory block exactly as the model sees it; search, add, edit and
forget memories (with each one's history and the message it came from); set and cancel
reminders; read sessions and follow a summary to its transcript; chat, with the reply
streamed from the OpenAI-compatible endpoint, in a project folder picked from
`[tools] projects`, with Approve / Deny buttons when a tool asks first; and the
owner's card importing history (web_imports.py). Fragments answer
htmx requests; a refused input is shown in place, never as a raw error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from lore.channels.http.access import ScopeAccess, known_conversations, known_scopes
from lore.channels.http.auth import Client, Forbidden, Unauthorized, fingerprint
from lore.channels.http.context import COOKIE, caller, gateway, page_login
from lore.channels.http.origin import check_from_page, check_same_origin, is_https
from lore.core.approval import Approval
from lore.errors import InvalidInputError, LoreError

__all__ = ["mount_static", "router"]

_HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(_HERE / "templates"))

router = APIRouter(include_in_schema=False)

Scope = Annotated[str | None, Query()]


def mount_static(app: FastAPI) -> None:
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")


async def _viewer(request: Request) -> Client | None:
    try:
        return await caller(request)
    except Unauthorized:
        return None


Viewer = Annotated[Client | None, Depends(_viewer)]
Caller = Annotated[Client, Depends(caller)]


def _access(request: Request, client: Client, scope: str | None) -> ScopeAccess:
    return ScopeAccess.open(gateway(request).lore, client, scope)


def _render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    zone = gateway(request).lore.zone
    context.setdefault("local", lambda stamp: _local(stamp, zone))
    login = page_login(request)
    context.setdefault("csrf", login.csrf if login is not None else "")
    return templates.TemplateResponse(request, name, context, status_code=status)


def _local(stamp: Any, zone: Any) -> str:
    if not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    if moment.tzinfo is None:
        return str(stamp)
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M")


# -- pages ------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, viewer: Viewer, scope: Scope = None) -> Response:
    if viewer is None:
        return _render(request, "login.html")
    try:
        access = _access(request, viewer, scope)
    except LoreError as exc:
        scopes = known_scopes(gateway(request).lore, viewer)
        return _render(request, "forbidden.html", 403, message=str(exc), scopes=scopes)
    conversations = known_conversations(gateway(request).lore, viewer)
    return _render(
        request,
        "index.html",
        conversations=conversations,
        current=next((c for c in conversations if c["scope"] == access.scope), None),
        owner=viewer.is_owner,
        **_memories_context(access),
        reminders=access.reminders(),
        undelivered=access.undelivered(),
        tasks=access.tasks(),
        sessions=access.sessions(),
        **_projects_context(request, viewer, access.scope),
        **await _imports_context(request, viewer),
    )


async def _imports_context(request: Request, viewer: Client) -> dict[str, Any]:
    """The "Import history" card: the owner's only."""
    if not viewer.is_owner:
        return {}
    from lore.channels.http.import_card import imports_context

    return await asyncio.to_thread(imports_context, gateway(request).lore)


def _projects_context(request: Request, viewer: Client, scope: str) -> dict[str, Any]:
    """The project picker: the owner's conversations only, the folders config allows."""
    from lore.tools.project import project_choices

    lore = gateway(request).lore
    tools = viewer.is_owner and lore.config.is_owner_scope(scope)
    if not tools:
        return {"tools": False, "projects": [], "project": ""}
    meta = lore.sessions.live_meta(scope)
    current = meta.extra.get("project") if meta is not None else None
    return {
        "tools": True,
        "projects": [str(path) for path in project_choices(lore.config)],
        "project": current or "",
    }


@router.post("/login")
async def login(request: Request, token: Annotated[str, Form()] = "") -> Response:
    state = gateway(request)
    check_same_origin(request, state.lore.config.api)  # nobody logs the owner in elsewhere
    try:
        state.clients.identify(token.strip())
    except Unauthorized:
        return _render(request, "login.html", 401, error="That token is not valid.")
    opened = state.logins.open(fingerprint(token.strip()), state.lore.clock.now())
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE,
        opened.id,
        max_age=int(state.logins.lifetime.total_seconds()),
        httponly=True,
        samesite="strict",
        secure=is_https(request, state.lore.config.api),
        path="/",
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    state = gateway(request)
    login = page_login(request)
    if login is not None:
        await check_from_page(request, login, state.lore.config.api)
        state.logins.close(login.id)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/ui/sessions/{session_id}", response_class=HTMLResponse)
async def transcript(
    request: Request, session_id: str, viewer: Viewer, scope: Scope = None
) -> Response:
    if viewer is None:
        return RedirectResponse("/", status_code=303)
    access = _access(request, viewer, scope)
    page = access.transcript(session_id, limit=1000)
    summary = None if page["session"]["live"] else access.summary(session_id)
    from lore.sessions.tools import describe_decision

    return _render(
        request,
        "transcript.html",
        scope=access.scope,
        page=page,
        summary=summary,
        decision=describe_decision,
    )


@router.get("/ui/sessions/{session_id}/messages/{index}/why", response_class=HTMLResponse)
async def why(
    request: Request, session_id: str, index: int, viewer: Viewer, scope: Scope = None
) -> Response:
    if viewer is None:
        return RedirectResponse("/", status_code=303)
    access = _access(request, viewer, scope)
    return _render(request, "why.html", scope=access.scope, why=access.why(session_id, index))


@router.get("/ui/sessions/{session_id}/summary", response_class=HTMLResponse)
async def summary(
    request: Request, session_id: str, viewer: Viewer, scope: Scope = None
) -> Response:
    if viewer is None:
        return RedirectResponse("/", status_code=303)
    access = _access(request, viewer, scope)
    found = access.summary(session_id)
    return _render(request, "summary.html", scope=access.scope, summary=found)


# -- fragments (htmx) -------------------------------------------------------------------


def _memories_context(access: ScopeAccess, error: str = "") -> dict[str, Any]:
    return {
        "scope": access.scope,
        "block": access.block(),
        "memories": access.memories()["memories"],
        "memory_error": error,
    }


def _memories(request: Request, access: ScopeAccess, change: Callable[[], object]) -> Response:
    """Apply `change`, then the memory section; a refusal is shown there, nothing changed."""
    try:
        change()
    except LoreError as exc:
        return _render(request, "_memories.html", **_memories_context(access, str(exc)))
    return _render(request, "_memories.html", **_memories_context(access))


@router.get("/ui/memories", response_class=HTMLResponse)
async def memories(request: Request, client: Caller, scope: Scope = None) -> Response:
    return _memories(request, _access(request, client, scope), lambda: None)


@router.post("/ui/memories", response_class=HTMLResponse)
async def add_memory(
    request: Request,
    client: Caller,
    content: Annotated[str, Form()] = "",
    kind: Annotated[str, Form()] = "fact",
    scope: Scope = None,
) -> Response:
    access = _access(request, client, scope)
    return _memories(request, access, lambda: access.remember(content, kind=kind or "fact"))


@router.get("/ui/memories/{memory_id}", response_class=HTMLResponse)
async def memory(request: Request, memory_id: int, client: Caller, scope: Scope = None) -> Response:
    access = _access(request, client, scope)
    record = access.memory(memory_id)
    return _render(
        request,
        "_memory.html",
        scope=access.scope,
        memory=record,
        history=access.history(memory_id),
        source=access.source_message(record),
    )


@router.post("/ui/memories/{memory_id}", response_class=HTMLResponse)
async def edit_memory(
    request: Request,
    memory_id: int,
    client: Caller,
    content: Annotated[str, Form()] = "",
    scope: Scope = None,
) -> Response:
    access = _access(request, client, scope)
    return _memories(request, access, lambda: access.update(memory_id, content))


@router.post("/ui/memories/{memory_id}/forget", response_class=HTMLResponse)
async def forget_memory(
    request: Request, memory_id: int, client: Caller, scope: Scope = None
) -> Response:
    access = _access(request, client, scope)
    return _memories(request, access, lambda: access.forget(memory_id))


@router.get("/ui/search", response_class=HTMLResponse)
async def search(
    request: Request, client: Caller, q: Annotated[str, Query()] = "", scope: Scope = None
) -> Response:
    access = _access(request, client, scope)
    results = await asyncio.to_thread(access.search, q, limit=20) if q.strip() else []
    return _render(request, "_search.html", scope=access.scope, query=q, results=results)


def _reminders(request: Request, access: ScopeAccess, change: Callable[[], object]) -> Response:
    error = ""
    try:
        change()
    except LoreError as exc:
        error = str(exc)
    return _render(
        request,
        "_reminders.html",
        scope=access.scope,
        reminders=access.reminders(),
        undelivered=access.undelivered(),
        tasks=access.tasks(),
        reminder_error=error,
    )


@router.post("/ui/reminders", response_class=HTMLResponse)
async def add_reminder(
    request: Request,
    client: Caller,
    text: Annotated[str, Form()] = "",
    when: Annotated[str, Form()] = "",
    scope: Scope = None,
) -> Response:
    access = _access(request, client, scope)
    return _reminders(request, access, lambda: access.remind(text, when or None))


@router.post("/ui/reminders/{reminder_id}/cancel", response_class=HTMLResponse)
async def cancel_reminder(
    request: Request, reminder_id: int, client: Caller, scope: Scope = None
) -> Response:
    access = _access(request, client, scope)
    return _reminders(request, access, lambda: access.cancel_reminder(reminder_id))


@router.get("/ui/sessions", response_class=HTMLResponse)
async def sessions(request: Request, client: Caller, scope: Scope = None) -> Response:
    access = _access(request, client, scope)
    return _render(request, "_sessions.html", scope=access.scope, sessions=access.sessions())


# -- approvals --------------------------------------------------------------------------


@router.post("/ui/approvals/{question_id}")
async def decide(
    request: Request,
    question_id: str,
    client: Caller,
    decision: Annotated[str, Form()] = "",
) -> dict[str, str]:
    """The owner's answer to a tool waiting in a streamed reply: approve or deny."""
    if not client.is_owner:
        raise Forbidden("only the owner may approve what a tool does")
    if decision not in ("approve", "deny"):
        raise InvalidInputError("decision must be approve or deny")
    # The page logs in with its cookie; a program answering for the owner sends the token.
    via = "api" if request.headers.get("authorization") else "web page"
    approval = Approval(decision == "approve", by=f"{client.author} ({via})")
    gateway(request).approvals.answer(question_id, approval)
    outcome = "approved" if approval.approved else "declined"
    return {"id": question_id, "outcome": outcome, "by": approval.by}


@router.get("/ui/approvals")
async def waiting(request: Request, client: Caller, scope: Scope = None) -> dict[str, Any]:
    """The questions still waiting in a conversation (for a page opened mid-turn)."""
    if not client.is_owner:
        raise Forbidden("only the owner may approve what a tool does")
    found = client.check(scope or client.default_scope)
    desk = gateway(request).approvals
    return {"scope": found, "approvals": [q.asked().record() for q in desk.waiting(found)]}
