"""Why a reply said what it said: its `why` record, with each memory looked up now.

The record holds references only (see `lore.core.provenance`); here each memory id is
read from the store as it is today, so a memory forgotten since shows as "forgotten"
and its text is nowhere. Every surface (/why, the REST route, the web page, `lore
sessions show --why`) renders through `explain` and `render_why`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from lore.core.provenance import Provenance, SourceRef
from lore.errors import NotFoundError

if TYPE_CHECKING:
    from lore.llm.base import Message
    from lore.ports.memories import MemoryStore

__all__ = ["explain", "last_reply", "render_why", "reply_at"]


def last_reply(messages: Sequence[Message]) -> int | None:
    """The index of the last assistant reply (one with text), None when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if _is_reply(messages[index]):
            return index
    return None


def reply_at(messages: Sequence[Message], index: int, *, offset: int = 0) -> Message:
    """Message `index` (its number in the transcript) when it is a reply; else NotFound."""
    if not offset <= index < offset + len(messages):
        raise NotFoundError(f"there is no message {index} in this session")
    message = messages[index - offset]
    if not _is_reply(message):
        raise NotFoundError(f"message {index} is not a reply (it is a {message.get('role')!r})")
    return message


def explain(
    memory: MemoryStore, scope: str, index: int, message: Message, zone: tzinfo
) -> dict[str, Any]:
    """The reply's record with every memory's current text (or "forgotten")."""
    record = Provenance.from_dict(message.get("why"))
    return {
        "message": index,
        "timestamp": message.get("timestamp", ""),
        "memories": [_memory(memory, scope, memory_id) for memory_id in record.memories],
        "hits": [_hit(memory, scope, hit, zone) for hit in record.hits],
        "files": record.files,
        "skills": record.skills,
    }


def render_why(explained: dict[str, Any]) -> str:
    """`explain`'s answer as text: one line per memory, hit, file list and skill list."""
    lines = [f"Why message {explained['message']}:"]
    if explained["memories"]:
        lines.append("memories in the block:")
        lines.extend(f"  #{m['id']} {m['text'] or m['status']}" for m in explained["memories"])
    if explained["hits"]:
        lines.append("search results its tools returned:")
        for hit in explained["hits"]:
            when = f" · {hit['date']}" if hit["date"] else ""
            via = f" ({hit['tool']})" if hit["tool"] else ""
            text = f": {hit['text'] or hit['status']}" if hit["kind"] == "memory" else ""
            lines.append(f"  {hit['label']}{when}{via}{text}")
    if explained["files"]:
        lines.append("files read: " + ", ".join(explained["files"]))
    if explained["skills"]:
        lines.append("skills loaded: " + ", ".join(explained["skills"]))
    if len(lines) == 1:
        lines.append("nothing from memory, search, files or skills: the conversation alone.")
    return "\n".join(lines)


def _is_reply(message: Message) -> bool:
    return message["role"] == "assistant" and bool(message.get("content"))


def _memory(memory: MemoryStore, scope: str, memory_id: int) -> dict[str, Any]:
    try:
        found = memory.get(scope, memory_id)
    except NotFoundError:
        return {"id": memory_id, "status": "forgotten", "text": None}
    status = found.status
    if found.superseded_by is not None:
        status = f"superseded by #{found.superseded_by}"
    return {"id": memory_id, "status": status, "text": found.content}


def _hit(memory: MemoryStore, scope: str, hit: SourceRef, zone: tzinfo) -> dict[str, Any]:
    data: dict[str, Any] = {
        **hit.to_dict(),
        "label": _label(hit),
        "date": _date(hit.at, zone),
        "status": None,
        "text": None,
    }
    if hit.kind == "memory":
        found = _memory(memory, scope, hit.locator)
        data.update(status=found["status"], text=found["text"])
    return data


def _label(hit: SourceRef) -> str:
    if hit.kind == "memory":
        return f"memory #{hit.locator}"
    if hit.kind == "note":
        return f"{hit.source}:{hit.locator}"
    if hit.kind == "session":
        return f"session {hit.source} from message {hit.locator}"
    return f"session {hit.source} message {hit.locator}"


def _date(at: float, zone: tzinfo) -> str:
    if not at:
        return ""
    return f"{datetime.fromtimestamp(at, UTC).astimezone(zone):%Y-%m-%d %H:%M}"
