"""The OpenAI-compatible chat API: `POST /v1/chat/completions` and `GET /v1/models`.

Clients send the whole conversation each time, as they do with any OpenAI server; Lore
keeps its own session per scope, so only the newest user message is taken in and the
rest is ignored (taking it again would double the history). The scope is the
`X-Lore-Session` header, else `api:<user>` from the `user` field, else the client's
default; a key that is not one (a line break, a control character, over 200 characters) is
refused before the turn runs. Headers carry only Latin-1, so `X-Lore-Session` comes back
percent-encoded UTF-8 (`api:%E6%97%A5`, `:` and `@` as they are), and one sent in is
decoded the same way. Tool calls run inside Lore and are never shown; the reply comes back as a
`chat.completion`, or as `chat.completion.chunk` server-sent events ending `[DONE]`.

A tool that must ask the owner first is refused (an error the model reads and explains),
unless the owner's streamed request opts in with `X-Lore-Approvals: stream`: then the
question comes in the stream and waits for `POST /ui/approvals/{id}` (see approvals.py).
The owner may name a project folder (`"project"` in the body) from `[tools] projects`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, unquote

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from lore.channels.http.approvals import (
    OPT_IN,
    ApprovalAsked,
    ApprovalSettled,
    Notice,
    WebApprover,
)
from lore.channels.http.auth import Client, Forbidden
from lore.channels.http.context import Gateway, caller, error_response, gateway
from lore.core.admission import check_message
from lore.errors import InvalidInputError, quoted
from lore.events import CommandOutput, Event, ReplyFailed, ReplyFinished, TextDelta, Trust
from lore.messages import FinishReason

__all__ = ["router"]

MODEL = "lore"

router = APIRouter(tags=["openai-compatible"])


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # temperature, tools, ...: Lore decides those
    model: str = MODEL
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = None
    project: str | None = None  # a folder from [tools] projects; the owner's token only


@router.get("/v1/models")
async def models(client: Annotated[Client, Depends(caller)]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "lore"}],
    }


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(
    body: ChatRequest,
    request: Request,
    client: Annotated[Client, Depends(caller)],
    x_lore_session: Annotated[str | None, Header()] = None,
    x_lore_approvals: Annotated[str | None, Header()] = None,
) -> JSONResponse | StreamingResponse:
    state = gateway(request)
    text = check_message(_new_user_text(body.messages), state.lore.config.max_message_chars)
    user = (body.user or "").strip(" ")
    scope = client.check(_scope(x_lore_session, user, client))
    author = user or client.author
    project = _project(state, client, scope, body.project)
    asks = body.stream and client.is_owner and (x_lore_approvals or "").strip() == OPT_IN
    reply = _Reply(state, scope, author, text, client, project=project, asks=asks)
    if body.stream:
        return StreamingResponse(
            reply.chunks(body.model),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Lore-Session": _session_header(scope)},
        )
    finished = await reply.finish()
    if isinstance(finished, CommandOutput):  # a slash command that refused: bad input
        return error_response(400, finished.text)
    if isinstance(finished, ReplyFailed) and finished.retry_after is not None:
        return error_response(503, finished.message, {"Retry-After": str(finished.retry_after)})
    if isinstance(finished, ReplyFailed):
        return error_response(502, finished.message)
    return JSONResponse(
        _completion(reply.id, body.model, finished),
        headers={"X-Lore-Session": _session_header(scope)},
    )


def _session_header(scope: str) -> str:
    """The `X-Lore-Session` value for a key: its UTF-8 percent-encoded, `:` and `@` kept."""
    return quote(scope, safe=":@")


def _session_of_header(value: str) -> str:
    """The key an `X-Lore-Session` header names: percent-encoded UTF-8, as Lore sends it;
    raw UTF-8 bytes (which arrive read as Latin-1) are taken as what they spell."""
    try:
        value = value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        pass
    try:
        return unquote(value.strip(" "), errors="strict")
    except UnicodeDecodeError:
        raise InvalidInputError(
            f"the X-Lore-Session header {quoted(value)} is not percent-encoded UTF-8"
        ) from None


def _scope(header: str | None, user: str, client: Client) -> str:
    if header and header.strip():
        return _session_of_header(header)
    if user:
        return f"api:{user}"
    return client.default_scope


def _project(state: Gateway, client: Client, scope: str, name: str | None) -> Path | None:
    if not name or not name.strip():
        return None
    from lore.tools.project import choose_project

    if not client.is_owner:
        raise Forbidden("only the owner's token may choose a project")
    if not state.lore.config.is_owner_scope(scope):
        raise InvalidInputError(
            f"{quoted(scope)} is not one of the owner's conversations (cli:*, owner_scopes), "
            "where the file tools work; a project needs one"
        )
    return choose_project(state.lore.config, name)


def _new_user_text(messages: list[ChatMessage]) -> str:
    last = messages[-1]
    if last.role != "user":
        raise InvalidInputError("the last message must be the user's (role 'user')")
    content = last.content
    if isinstance(content, list):
        parts = [str(p.get("text", "")) for p in content if p.get("type") == "text"]
        content = "\n".join(part for part in parts if part)
    if not content or not content.strip():
        raise InvalidInputError("the last user message has no text")
    return content


class _Reply:
    """One turn's events, consumed either all at once or as a stream of chunks."""

    def __init__(
        self,
        state: Gateway,
        scope: str,
        author: str,
        text: str,
        client: Client,
        *,
        project: Path | None = None,
        asks: bool = False,
    ) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self._events: asyncio.Queue[Event | Notice | None] = asyncio.Queue()
        trust: Trust = "owner" if client.is_owner else "guest"
        approver = None
        if asks:
            seconds = state.lore.config.tools.approval_timeout
            approver = WebApprover(state.approvals, scope, self._events.put_nowait, seconds=seconds)
        run = state.turns.send(
            scope,
            author,
            text,
            self._events.put_nowait,
            trust=trust,
            approver=approver,
            project=project,
        )
        task = asyncio.create_task(self._run(run))
        # The turn finishes (and is saved) even if the client hangs up mid-reply.
        state.running.add(task)
        task.add_done_callback(state.running.discard)

    async def _run(self, run: Awaitable[None]) -> None:
        try:
            await run
        finally:
            self._events.put_nowait(None)

    async def events(self) -> AsyncIterator[Event | Notice]:
        while (event := await self._events.get()) is not None:
            yield event

    async def finish(self) -> ReplyFinished | ReplyFailed | CommandOutput:
        """The reply (a command's output counts as one), or why there is none."""
        outcome: ReplyFinished | ReplyFailed | CommandOutput = ReplyFailed("Lore gave no reply")
        async for event in self.events():
            if isinstance(event, CommandOutput) and event.ok:
                outcome = ReplyFinished(event.text)
            elif isinstance(event, ReplyFinished | ReplyFailed | CommandOutput):
                outcome = event
        return outcome

    async def chunks(self, model: str) -> AsyncIterator[str]:
        yield self._chunk(model, {"role": "assistant", "content": ""})
        async for event in self.events():
            if isinstance(event, ApprovalAsked | ApprovalSettled):
                yield f"data: {json.dumps(event.record(), ensure_ascii=False)}\n\n"
            elif isinstance(event, TextDelta) and event.text:
                yield self._chunk(model, {"content": event.text})
            elif isinstance(event, ReplyFinished):
                yield self._chunk(model, {}, finish="stop")
            elif isinstance(event, CommandOutput) and event.ok:
                yield self._chunk(model, {"content": event.text})
                yield self._chunk(model, {}, finish="stop")
            elif isinstance(event, ReplyFailed | CommandOutput):
                status, message = (
                    (400, event.text) if isinstance(event, CommandOutput) else (502, event.message)
                )
                error = {"error": {"status": status, "message": message}}
                yield f"data: {json.dumps(error, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"

    def _chunk(
        self, model: str, delta: dict[str, Any], *, finish: FinishReason | None = None
    ) -> str:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"


def _completion(reply_id: str, model: str, finished: ReplyFinished) -> dict[str, Any]:
    return {
        "id": reply_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": finished.text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": finished.input_tokens,
            "completion_tokens": finished.output_tokens,
            "total_tokens": finished.input_tokens + finished.output_tokens,
        },
    }
