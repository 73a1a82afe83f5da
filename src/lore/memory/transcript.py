"""A stretch of conversation as plain text, for a model (a summary, a flush) or a person.

Times are the user's local time: messages store UTC, and a summary that read "23:30"
for a Taipei morning would file what was said under the wrong day.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

from lore.llm.base import Message, content_text

__all__ = ["local_minute", "render_messages"]

_TOOL_RESULT_CHARS = 500


def render_messages(
    messages: Sequence[Message], *, zone: tzinfo, max_chars: int | None = _TOOL_RESULT_CHARS
) -> str:
    """A plain transcript for a model or a person: one block per message, tools included.

    Times are the user's local time (`zone`): messages store UTC, and a summary that read
    "23:30" for a Taipei morning would file what was said under the wrong day.
    """
    blocks: list[str] = []
    for message in messages:
        if message.get("cancelled"):
            continue  # the user took it back
        role = message["role"]
        content = content_text(message.get("content"))
        stamp = local_minute(str(message.get("timestamp", "")), zone)
        who = f"{role} ({message['author']})" if message.get("author") else role
        prefix = f"[{stamp}] {who}" if stamp else who
        if role == "tool":
            name = message.get("name", "tool")
            if max_chars is not None and len(content) > max_chars:
                content = content[:max_chars] + " …"
            blocks.append(f"{prefix} {name}: {content}")
            continue
        lines = [f"{prefix}: {content}" if content else f"{prefix}:"]
        for call in message.get("tool_calls") or []:
            lines.append(f"  → {call.get('name', '?')}({call.get('arguments', '')})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def local_minute(timestamp: str, zone: tzinfo) -> str:
    """An ISO timestamp as "YYYY-MM-DD HH:MM" in `zone` ("" if it does not parse)."""
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(zone)
    return f"{moment:%Y-%m-%d %H:%M}"
