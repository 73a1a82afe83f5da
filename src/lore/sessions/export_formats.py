"""Reading another assistant's history: the ChatGPT data export, the Claude export and a
folder of Markdown notes (an Obsidian vault), into conversations and notes to import
(nanobot, OpenClaw and mem0 are read by lore.sessions.export_agents).

Reading never writes anything. A damaged item (a conversation without messages, a note
that is not UTF-8) is skipped with its reason, and a file cut off part-way keeps the
conversations before the cut; only a file with nothing readable in it is an error.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.errors import InvalidInputError
from lore.llm.base import Message
from lore.sessions.export_records import (
    Conversation,
    Export,
    ImportedNote,
    Skipped,
    aware_time,
    message_at,
)

__all__ = [
    "SOURCES",
    "Conversation",
    "Export",
    "ImportedNote",
    "Skipped",
    "read_export",
]

SOURCES = ("chatgpt", "claude", "nanobot", "openclaw", "mem0", "markdown")

_CONVERSATIONS = "conversations.json"


def read_export(source: str, path: Path) -> Export:
    """Everything readable in the export at `path`; an InvalidInputError (one line) when
    there is nothing to read at all."""
    if source not in SOURCES:
        raise InvalidInputError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file or folder")
    export = Export(source, str(path))
    if source == "markdown":
        _read_notes(export, path)
        return export
    if source in ("nanobot", "openclaw", "mem0"):
        from lore.sessions.export_agents import read_mem0, read_nanobot, read_openclaw

        {"nanobot": read_nanobot, "openclaw": read_openclaw, "mem0": read_mem0}[source](
            export, path
        )
        return export
    items = _json_list(export, _conversations_text(path))
    read = _chatgpt if source == "chatgpt" else _claude
    for number, item in enumerate(items, start=1):
        label = _label(item, number)
        try:
            conversation = read(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            export.skipped.append(Skipped(label, f"not a {source} conversation ({_why(exc)})"))
            continue
        if not conversation.messages:
            export.skipped.append(Skipped(label, "no user or assistant message with text"))
            continue
        export.conversations.append(conversation)
    return export


# -- the file ---------------------------------------------------------------------------


def _conversations_text(path: Path) -> str:
    """conversations.json's text: the file itself, in a folder, or in the export's zip."""
    if path.is_dir():
        path = path / _CONVERSATIONS
        if not path.is_file():
            raise InvalidInputError(f"{path.parent}: no {_CONVERSATIONS} in this folder")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == _CONVERSATIONS]
            if not names:
                raise InvalidInputError(f"{path}: the zip holds no {_CONVERSATIONS}")
            data = archive.read(min(names, key=len))
    else:
        data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path}: not UTF-8 text, not an export") from None


def _json_list(export: Export, text: str) -> list[Any]:
    """The export's list of conversations; when the file is cut off or damaged part-way,
    the conversations before the damage and one skipped item saying where it is."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        raise InvalidInputError(f"{export.path}: a JSON object, not the export's list")
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        raise InvalidInputError(f"{export.path}: not JSON, not a {export.source} export")
    items: list[Any] = []
    position = _skip_space(text, position + 1)
    while position < len(text) and text[position] != "]":
        try:
            item, position = decoder.raw_decode(text, position)
        except ValueError:
            break
        items.append(item)
        position = _skip_space(text, position)
        if text.startswith(",", position):
            position = _skip_space(text, position + 1)
    if not items:
        raise InvalidInputError(f"{export.path}: damaged JSON, no conversation could be read")
    export.skipped.append(
        Skipped(
            f"after conversation {len(items)}",
            f"the file is cut off or damaged at character {position}; the rest is unread",
        )
    )
    return items


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


# -- ChatGPT ------------------------------------------------------------------------------


def _chatgpt(item: dict[str, Any]) -> Conversation:
    """A conversation of the data export: a `mapping` of nodes (parent, children), whose
    branch ending at `current_node` is the one its user last saw (edits and regenerated
    replies leave other branches)."""
    mapping: dict[str, Any] = item["mapping"]
    if not isinstance(mapping, dict):
        raise TypeError("mapping is not an object")
    created = _epoch(item.get("create_time"))
    messages: list[Message] = []
    for node in _branch(mapping, item.get("current_node")):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        if role not in ("user", "assistant") or metadata.get(
            "is_visually_hidden_from_conversation"
        ):
            continue  # system prompts, tool output, hidden context
        if role == "assistant" and message.get("recipient", "all") != "all":
            continue  # a call to a tool (browsing, code), not a reply
        text = _chatgpt_text(message.get("content") or {})
        if not text:
            continue
        moment = _epoch(message.get("create_time")) or created
        messages.append(message_at(role, text, moment))
    first = created or _first_time(messages)
    updated = _epoch(item.get("update_time")) or _last_time(messages) or first
    return Conversation(
        "chatgpt",
        str(item.get("conversation_id") or item.get("id") or ""),
        str(item.get("title") or "").strip(),
        first or datetime.fromtimestamp(0, UTC),
        updated or datetime.fromtimestamp(0, UTC),
        messages,
    )


def _branch(mapping: dict[str, Any], current: object) -> list[dict[str, Any]]:
    """The nodes from the root to `current_node`; without one (an older export), the
    branch of each node's last child."""
    if isinstance(current, str) and current in mapping:
        path: list[dict[str, Any]] = []
        seen: set[str] = set()
        node_id: object = current
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            path.append(mapping[node_id])
            node_id = mapping[node_id].get("parent")
        return path[::-1]
    roots = [n for n in mapping.values() if not n.get("parent") or n["parent"] not in mapping]
    if not roots:
        raise ValueError("the message tree has no root")
    path = [roots[0]]
    while path[-1].get("children") and len(path) <= len(mapping):
        child = path[-1]["children"][-1]
        if child not in mapping:
            break
        path.append(mapping[child])
    return path


def _chatgpt_text(content: dict[str, Any]) -> str:
    if content.get("content_type") not in ("text", "multimodal_text"):
        return ""  # code, execution output, browsing results, reasoning
    parts = content.get("parts") or []
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


# -- Claude -------------------------------------------------------------------------------


def _claude(item: dict[str, Any]) -> Conversation:
    """A conversation of the Claude export: `chat_messages` in order, each from the
    `human` or the `assistant`, its words in `text` or in `content` parts."""
    chat = item["chat_messages"]
    if not isinstance(chat, list):
        raise TypeError("chat_messages is not a list")
    created = aware_time(item.get("created_at"))
    messages: list[Message] = []
    for entry in chat:
        if not isinstance(entry, dict):
            continue
        role = {"human": "user", "assistant": "assistant"}.get(str(entry.get("sender")))
        if role is None:
            continue
        text = _claude_text(entry)
        if not text:
            continue
        moment = aware_time(entry.get("created_at")) or created
        messages.append(message_at(role, text, moment))
    first = created or _first_time(messages)
    updated = aware_time(item.get("updated_at")) or _last_time(messages) or first
    return Conversation(
        "claude",
        str(item.get("uuid") or ""),
        str(item.get("name") or "").strip(),
        first or datetime.fromtimestamp(0, UTC),
        updated or datetime.fromtimestamp(0, UTC),
        messages,
    )


def _claude_text(entry: dict[str, Any]) -> str:
    parts = entry.get("content")
    if isinstance(parts, list):
        texts = [
            str(p.get("text") or "")
            for p in parts
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        joined = "\n".join(t for t in texts if t).strip()
        if joined:
            return joined
    text = entry.get("text")
    return text.strip() if isinstance(text, str) else ""


# -- Markdown notes -----------------------------------------------------------------------


def _read_notes(export: Export, root: Path) -> None:
    """Every .md file under `root`, except in hidden folders (.obsidian, .trash)."""
    if root.is_file():
        files, root = [root], root.parent
    else:
        files = sorted(_markdown_files(root))
    for path in files:
        relative = path.relative_to(root).as_posix()
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            export.skipped.append(Skipped(relative, "not UTF-8 text"))
            continue
        except OSError as exc:
            export.skipped.append(Skipped(relative, f"cannot be read ({exc.strerror})"))
            continue
        if not text.strip():
            export.skipped.append(Skipped(relative, "empty"))
            continue
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        export.notes.append(ImportedNote(relative, text, modified))
    if not files:
        raise InvalidInputError(f"{root}: no Markdown (.md) notes in this folder")


def _markdown_files(root: Path) -> Iterator[Path]:
    for path in root.rglob("*.md"):
        parts = path.relative_to(root).parts
        if path.is_file() and not any(part.startswith(".") for part in parts):
            yield path


# -- shared -------------------------------------------------------------------------------


def _epoch(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _first_time(messages: list[Message]) -> datetime | None:
    return next((t for m in messages if (t := aware_time(m.get("timestamp"))) is not None), None)


def _last_time(messages: list[Message]) -> datetime | None:
    return _first_time(messages[::-1])


def _label(item: object, number: int) -> str:
    if isinstance(item, dict):
        title = item.get("title") or item.get("name")
        if isinstance(title, str) and title.strip():
            return f"conversation {number} ({title.strip()[:60]})"
    return f"conversation {number}"


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc) or type(exc).__name__
