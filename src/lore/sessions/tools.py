"""The model's session tools: session_list and session_history.

They read the exact archive (`sessions/_sessions.jsonl`, `sessions/archive/*.jsonl`) and
the live session, and only ever for the calling conversation's scope: an id or key of
another conversation is a clear error, and nothing of it is shown. History comes in
pages, each message and each page bounded, so a long session never floods the context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from lore.core.provenance import SourceRef
from lore.core.tools import ToolContext, optional_int, optional_str
from lore.errors import ToolError, quoted
from lore.llm.base import Message, content_text
from lore.messages import Decision
from lore.ports.sessions import ArchivedSession
from lore.text import counted

if TYPE_CHECKING:
    from lore.ports.sessions import SessionStore

__all__ = [
    "SessionHistoryTool",
    "SessionListTool",
    "archived_sessions",
    "describe_decision",
    "render_page",
]

DEFAULT_PAGE = 20
MAX_PAGE = 50
MESSAGE_CHARS = 2000  # a longer message is cut, with a note
PAGE_CHARS = 12_000  # a page stops before it grows past this

_LIST = (
    "List the closed (archived) sessions of this conversation, newest first: session id, "
    "when it ended, its slug, message count, the exact transcript's path and its summary "
    "file. Every filter is optional: session_id (or its first characters), key, and parts "
    "of slug, memory_path or transcript_path. Use it to find a past conversation, then "
    "session_history(session_id=...) to read exactly what was said. Summaries of what was "
    "discussed live in memory files; this is the way to the word-for-word record."
)
_HISTORY = (
    "Read the exact messages of a session of this conversation, tool calls and results "
    "included, a page at a time: session_id for an archived session (from session_list), "
    "or no id (or session_key) for the live session. offset is the index of the first "
    "message (negative counts from the end, e.g. -20 for the last 20); limit is at most "
    f"{MAX_PAGE}. The answer says how to get the next page."
)


def archived_sessions(sessions: SessionStore, scope: str) -> list[ArchivedSession]:
    """This scope's archived sessions, newest first."""
    entries = [e for e in sessions.archive.entries() if e.key == scope]
    # Index order breaks ties between sessions closed in the same second.
    return sorted(reversed(entries), key=lambda e: e.ended_at, reverse=True)


def find_archived(sessions: SessionStore, scope: str, session_id: str) -> ArchivedSession:
    """The archived session of `scope` with this id (or unique id prefix)."""
    wanted = session_id.strip().lower()
    matches = [e for e in archived_sessions(sessions, scope) if e.session_id.startswith(wanted)]
    exact = [e for e in matches if e.session_id == wanted]
    if exact:
        return exact[0]
    if len(wanted) >= 4 and len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        ids = ", ".join(e.session_id[:12] for e in matches[:5])
        raise ToolError(f"session id {quoted(session_id)} is ambiguous ({ids}); give more of it")
    raise ToolError(
        f"no archived session {quoted(session_id)} in this conversation; "
        "session_list shows the ones there are"
    )


class SessionListTool:
    name = "session_list"
    description = _LIST
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "the id or its first characters"},
            "key": {"type": "string", "description": "conversation key (only this one's)"},
            "slug": {"type": "string", "description": "part of the session's slug"},
            "memory_path": {"type": "string", "description": "part of the summary file path"},
            "transcript_path": {"type": "string", "description": "part of the transcript path"},
            "limit": {"type": "integer", "description": f"at most this many (≤ {MAX_PAGE})"},
        },
    }

    def __init__(self, sessions: SessionStore, zone: tzinfo) -> None:
        self._sessions = sessions
        self._zone = zone

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        key = optional_str(args, "key")
        if key is not None and key != ctx.scope:
            raise ToolError(
                "sessions of another conversation are not visible here; "
                f"this conversation is {ctx.scope}"
            )
        limit = max(1, min(optional_int(args, "limit", DEFAULT_PAGE), MAX_PAGE))
        session_id = optional_str(args, "session_id")
        if session_id is not None:
            found = [find_archived(self._sessions, ctx.scope, session_id)]
        else:
            found = archived_sessions(self._sessions, ctx.scope)
        for field in ("slug", "memory_path", "transcript_path"):
            wanted = optional_str(args, field)
            if wanted is not None:
                found = [e for e in found if wanted.lower() in (getattr(e, field) or "").lower()]
        live = self._sessions.live(ctx.scope)
        lines = [
            f"Live session: {live.meta.session_id} ({counted(len(live.messages), 'message')}); "
            "session_history() with no id shows it."
        ]
        if not found:
            lines.append("No archived sessions of this conversation match.")
            return "\n".join(lines)
        shown = found[:limit]
        lines.append(f"{len(found)} archived session(s), newest first:")
        zone = self._zone
        lines.extend(describe_session(entry, zone) for entry in shown)
        if len(found) > len(shown):
            lines.append(f"{len(found) - len(shown)} more not shown; narrow the filters.")
        return "\n".join(lines)


class SessionHistoryTool:
    name = "session_history"
    description = _HISTORY
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "session_id": {"type": "string", "description": "an archived session's id"},
            "session_key": {"type": "string", "description": "this conversation's key"},
            "offset": {"type": "integer", "description": "first message index (default 0)"},
            "limit": {"type": "integer", "description": f"messages per page (≤ {MAX_PAGE})"},
        },
    }

    def __init__(self, sessions: SessionStore, zone: tzinfo) -> None:
        self._sessions = sessions
        self._zone = zone

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        key = optional_str(args, "session_key")
        if key is not None and key != ctx.scope:
            raise ToolError(
                "the history of another conversation is not visible here; "
                f"this conversation is {ctx.scope}"
            )
        offset = optional_int(args, "offset", 0)
        limit = max(1, min(optional_int(args, "limit", DEFAULT_PAGE), MAX_PAGE))
        session_id = optional_str(args, "session_id")
        live = self._sessions.live(ctx.scope)
        if session_id is None or _names(live.meta.session_id, session_id):
            title = f"Live session {live.meta.session_id} of {ctx.scope}"
            page = _page(live.messages, offset, limit)
            here = SourceRef("session", live.meta.session_id, page.start, 0, self.name)
            ctx.provenance.found(here)
            return render_page(
                title, page, len(live.messages), self._zone, next_call=_next_call(None)
            )
        entry = find_archived(self._sessions, ctx.scope, session_id)
        title = (
            f"Archived session {entry.session_id} of {entry.key}, ended "
            f"{_local(entry.ended_at, self._zone)} ({entry.slug})"
        )
        start = offset if offset >= 0 else max(entry.message_count + offset, 0)
        messages, total = self._sessions.archive.read_messages(entry, offset=start, limit=limit)
        ended = _seconds(entry.ended_at)
        ctx.provenance.found(SourceRef("session", entry.session_id, start, ended, self.name))
        return render_page(
            title,
            Page(start, messages),
            total,
            self._zone,
            next_call=_next_call(entry.session_id),
        )


@dataclass(frozen=True)
class Page:
    start: int
    messages: Sequence[Message]


def _page(messages: Sequence[Message], offset: int, limit: int) -> Page:
    start = offset if offset >= 0 else max(len(messages) + offset, 0)
    return Page(start, messages[start : start + limit])


def render_page(title: str, page: Page, total: int, zone: tzinfo, *, next_call: str = "") -> str:
    """A bounded page of messages: each cut at MESSAGE_CHARS, the page at PAGE_CHARS."""
    blocks: list[str] = []
    used = 0
    for number, message in enumerate(page.messages, start=page.start):
        block = render_message(number, message, zone)
        if blocks and used + len(block) > PAGE_CHARS:
            break
        blocks.append(block)
        used += len(block)
    if not blocks:
        return f"{title}: no messages at {page.start} (it has {total})."
    end = page.start + len(blocks)
    lines = [f"{title}: messages {page.start}–{end - 1} of {total}", "", *blocks]
    if end < total:
        call = next_call.format(offset=end) if next_call else f"offset={end}"
        lines += ["", f"{total - end} more; next page: {call}"]
    return "\n".join(lines)


def render_message(number: int, message: Message, zone: tzinfo) -> str:
    role = message["role"]
    who = f"{role} ({message['author']})" if message.get("author") else role
    stamp = _local(str(message.get("timestamp", "")), zone)
    head = f"[{number}] {who}" + (f" {stamp}" if stamp else "")
    if role == "tool":
        head += f" {message.get('name', 'tool')}"
        decision = message.get("decision")
        if isinstance(decision, dict):
            head += f" [{describe_decision(decision)}]"
    lines = [f"{head}: {_cut(content_text(message.get('content')))}"]
    for call in message.get("tool_calls") or []:
        lines.append(f"    → {call.get('name', '?')}({_cut(str(call.get('arguments', '')))})")
    return "\n".join(lines)


def describe_decision(decision: Decision) -> str:
    """What the trust policy decided for a tool run, as one phrase."""
    outcome = decision.get("outcome", "?")
    if outcome == "approved":
        return f"approved by {decision.get('by', '?')}"
    if outcome == "refused":
        return f"refused: {decision.get('reason', '?')}"
    return outcome


def describe_session(entry: ArchivedSession, zone: tzinfo) -> str:
    summary = entry.memory_path or f"({entry.summary})"
    return (
        f"- {entry.session_id} · ended {_local(entry.ended_at, zone)} · {entry.slug} · "
        f"{counted(entry.message_count, 'message')}\n"
        f"  transcript: {entry.transcript_path}\n"
        f"  summary: {summary}"
    )


def _names(session_id: str, given: str) -> bool:
    """Does `given` name this session (the whole id, or at least its first 4 characters)?"""
    given = given.strip().lower()
    return session_id == given or (len(given) >= 4 and session_id.startswith(given))


def _next_call(session_id: str | None) -> str:
    if session_id:
        return f'session_history(session_id="{session_id}", offset={{offset}})'
    return "session_history(offset={offset})"


def _cut(text: str) -> str:
    if len(text) <= MESSAGE_CHARS:
        return text
    return f"{text[:MESSAGE_CHARS]} … [{len(text) - MESSAGE_CHARS} more characters]"


def _seconds(timestamp: str) -> float:
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0


def _local(timestamp: str, zone: tzinfo) -> str:
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return ""
    if moment.tzinfo is None:
        return f"{moment:%Y-%m-%d %H:%M}"
    return f"{moment.astimezone(zone):%Y-%m-%d %H:%M}"
