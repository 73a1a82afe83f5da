"""The message record: what a live session stores, a provider is sent and a channel shows.

A message is a plain JSON object, typed as a `TypedDict`, so a transcript line and a
message in memory are the same thing and transcripts already written read unchanged:

    {"role": "user", "content": "...", "author": "john", "timestamp": "..."}
    {"role": "assistant", "content": "...", "tool_calls": [{"id", "name", "arguments"}]}
    {"role": "tool", "tool_call_id": "...", "name": "...", "content": "..."}

`arguments` is the JSON text the model produced. What comes from outside (a line read
back from disk or a database) goes through `parse_message` once, where it enters; keys
this module does not know (a mark's flags) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Required, TypedDict, cast, get_args

from lore.errors import SessionError, quoted

__all__ = [
    "ROLES",
    "ContentPart",
    "Decision",
    "FinishReason",
    "ImagePart",
    "ImageURL",
    "Message",
    "Outcome",
    "Role",
    "TextPart",
    "ToolCallRecord",
    "TrustLevel",
    "content_text",
    "finish_reason",
    "merge_flags",
    "parse_message",
    "without_tool_calls",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = get_args(Role)

# Why a model stopped, in the OpenAI words every provider maps its own to; "incomplete":
# the stream ended without saying; "other": a reason this list does not know.
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "incomplete", "other"]
FINISH_REASONS: tuple[FinishReason, ...] = get_args(FinishReason)


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImageURL(TypedDict, total=False):
    url: Required[str]  # https://… or data:image/…;base64,…
    detail: Literal["auto", "low", "high"]


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageURL


ContentPart = TextPart | ImagePart


class ToolCallRecord(TypedDict):
    """A tool call as an assistant message stores it."""

    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


TrustLevel = Literal["allow", "ask", "never"]
TRUST_LEVELS: tuple[TrustLevel, ...] = get_args(TrustLevel)
Outcome = Literal["allowed", "approved", "refused"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


class Decision(TypedDict, total=False):
    """What the trust policy decided for one tool run (lore.tools.trust)."""

    trust: Required[TrustLevel]
    outcome: Required[Outcome]
    by: str  # approved: by whom, and where
    reason: str  # refused: why


class Message(TypedDict, total=False):
    role: Required[Role]
    content: str | list[ContentPart]
    timestamp: str  # ISO 8601, UTC
    # who said it, where (user messages)
    author: str
    author_id: str  # the channel's id of the author, to mention them later
    channel: str  # absent for the terminal
    message_id: str  # the channel's id of the message: one handled again is recognised
    # tool traffic
    tool_calls: list[ToolCallRecord]  # assistant
    tool_call_id: str  # tool
    name: str  # tool: the tool's name
    is_error: bool  # tool: the result is an error
    decision: Decision  # tool: what the trust policy decided
    # what became of a turn
    why: dict[str, Any]  # assistant: what the reply rested on (lore.core.provenance)
    interrupted: bool  # assistant: cut off by a crash or a stop, kept as far as shown
    cancelled: bool  # user: taken back (Ctrl+C); never in a window again
    unanswered: bool  # user: the turn failed
    # a delivered reminder
    delivery: str  # the occurrence's idempotency key
    reminder_id: int
    late: bool


_TEXT_KEYS = (
    "timestamp",
    "author",
    "author_id",
    "channel",
    "message_id",
    "tool_call_id",
    "name",
    "delivery",
)
_DETAILS = ("auto", "low", "high")
_FLAG_KEYS = ("is_error", "interrupted", "cancelled", "unanswered", "late")


def parse_message(data: object) -> Message:
    """A JSON value read back as a message; a SessionError saying, in one line, what is
    wrong with it. Every key it knows must have its type; other keys are kept."""
    if not isinstance(data, dict):
        raise SessionError(f"not a message: {_json_kind(data)}, not an object")
    role = data.get("role")
    if role not in ROLES:
        shown = quoted(role) if isinstance(role, str) else _json_kind(role, article=False)
        raise SessionError(f"not a message: role {shown} is not one of {', '.join(ROLES)}")
    problem = _content_problem(data["content"]) if "content" in data else None
    for key in _TEXT_KEYS:
        if problem is None and key in data and not isinstance(data[key], str):
            problem = f"{key} is {_json_kind(data[key])}, not a string"
    for key in _FLAG_KEYS:
        if problem is None and key in data and not isinstance(data[key], bool):
            problem = f"{key} is {_json_kind(data[key])}, not true or false"
    if problem is None and "tool_calls" in data:
        problem = _tool_calls_problem(data["tool_calls"])
    if problem is None and "reminder_id" in data and not _is_int(data["reminder_id"]):
        problem = f"reminder_id is {_json_kind(data['reminder_id'])}, not a whole number"
    if problem is None and "why" in data and not isinstance(data["why"], dict):
        problem = f"why is {_json_kind(data['why'])}, not an object"
    if problem is None and "decision" in data:
        problem = _decision_problem(data["decision"])
    if problem is not None:
        raise SessionError(f"not {'an' if role == 'assistant' else 'a'} {role} message: {problem}")
    return cast(Message, data)


def finish_reason(reason: str) -> FinishReason:
    """A provider's finish reason in the words above ("other" for one they do not know)."""
    return next((known for known in FINISH_REASONS if known == reason), "other")


def merge_flags(message: Message, flags: Mapping[str, object]) -> None:
    """Set a mark's flags on `message` (cancelled, unanswered, or any other a store kept);
    flags that would make it malformed are a SessionError, and `message` is left as it was."""
    if not isinstance(flags, Mapping):
        raise SessionError(f"not a mark: flags are {_json_kind(flags)}, not an object")
    parse_message({**message, **flags})
    cast(dict[str, object], message).update(flags)


def without_tool_calls(message: Message) -> Message:
    """A copy of `message` keeping its text but not its tool calls."""
    kept = message.copy()
    kept.pop("tool_calls", None)
    return kept


def content_text(content: object) -> str:
    """A message's content as plain text (a list of parts joins their text)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _content_problem(content: object) -> str | None:
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"content is {_json_kind(content)}, not text or a list of parts"
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind == "image_url" and isinstance((url := part.get("image_url")), dict):
            if isinstance(url.get("url"), str) and url.get("detail", "auto") in _DETAILS:
                continue
        return f"content part {number} is not a text or image part"
    return None


def _decision_problem(decision: object) -> str | None:
    if not isinstance(decision, dict):
        return f"decision is {_json_kind(decision)}, not an object"
    if decision.get("trust") not in TRUST_LEVELS or decision.get("outcome") not in OUTCOMES:
        return "decision lacks a known trust level or outcome"
    if not all(isinstance(decision.get(key, ""), str) for key in ("by", "reason")):
        return "decision's by or reason is not a string"
    return None


def _tool_calls_problem(calls: object) -> str | None:
    if not isinstance(calls, list):
        return f"tool_calls is {_json_kind(calls)}, not a list"
    for number, call in enumerate(calls):
        if not isinstance(call, dict) or not all(
            isinstance(call.get(key), str) for key in ("id", "name", "arguments")
        ):
            return f"tool call {number} lacks a text id, name or arguments"
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_kind(value: object, *, article: bool = True) -> str:
    """What JSON calls `value`'s type, as a sentence names it ("a number", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int | float):
        kind = "number"
    elif isinstance(value, str):
        kind = "string"
    elif isinstance(value, list):
        kind = "list"
    elif isinstance(value, dict):
        kind = "object"
    else:
        kind = type(value).__name__
    if not article:
        return kind
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
