"""The model's memory tools: remember and forget.

Their descriptions fence them from set_reminder and from each other (a correction
forgets the old #id first). The code does not trust the model: forget only accepts an
id shown in this turn's block (or remembered or found by memory_search in this turn),
within this scope.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lore.core.forgetting import KEPT_IN_TRANSCRIPT, forget_memory
from lore.core.tools import ToolContext, required_str
from lore.errors import InvalidInputError, NotFoundError, ToolError
from lore.ports.memories import KINDS, MAX_CONTENT, Source

if TYPE_CHECKING:
    from lore.core.feature import Assembled
    from lore.ports.memories import MemoryStore

__all__ = ["ForgetTool", "RememberTool"]

_REMEMBER = (
    "Store a long-term fact that should still be true later; it appears in the "
    "<long_term_memory> block of every future turn of this conversation, with its #id. "
    "Call it when the user says 'remember…', 'my birthday is…', 'call me…', 'I live in…', "
    "'I prefer…': a stable fact that keeps applying. "
    "⚠️ Only long-term stable facts (preferences, names, family members, places, habits); "
    "a one-shot todo or anything tied to a time ('remind me in 10 minutes') is "
    "set_reminder, not this. "
    "⚠️ If this corrects a fact already in the block, call forget with the old #id first, "
    "then remember the new fact. "
    f"One fact per call, at most {MAX_CONTENT} characters, written as a sentence that makes "
    "sense on its own ('John lives in Hualien'). Never store passwords, keys, tokens or "
    "card numbers: they are refused. Only tell the user it is noted after this succeeds."
)
_FORGET = (
    "Erase one memory from this conversation's long-term memory by its #id, exactly as "
    "shown in the <long_term_memory> block (or returned by remember or memory_search this "
    "turn). The text is erased for good. Use it when the user asks to forget something, "
    "or first when correcting a fact (then remember the corrected one). Never guess an id. "
    "To cancel a reminder use cancel_reminder, not this."
)


class RememberTool:
    name = "remember"
    description = _REMEMBER
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "description": f"the fact, one self-contained sentence, ≤ {MAX_CONTENT} chars",
            },
            "kind": {
                "type": "string",
                "enum": list(KINDS),
                "description": "profile: who someone is (name, home, job); preference: likes "
                "and habits; relation: family and friends; plan: lasting intentions; event: "
                "something that happened; fact: anything else (default)",
            },
            "keywords": {
                "type": "array",
                "items": {"type": "string"},
                "description": "synonyms and broader terms, in the user's language too, that "
                "should also find this memory (e.g. for 美式咖啡: 咖啡, 提神, coffee)",
            },
        },
        "required": ["content"],
    }

    def __init__(self, memories: MemoryStore) -> None:
        self._memories = memories

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        content = required_str(args, "content")
        kind = args.get("kind") or "fact"
        keywords = args.get("keywords") or []
        if not isinstance(kind, str):
            raise ToolError("'kind' must be a string")
        if isinstance(keywords, str):
            keywords = keywords.split(",")
        if not isinstance(keywords, list):
            raise ToolError("'keywords' must be a list of strings")
        try:
            memory, created = self._memories.remember(
                ctx.scope,
                content,
                kind=kind,
                keywords=keywords,
                author=ctx.author,
                via="tool",
                now=ctx.now,
                source=Source(ctx.session_id, ctx.message_index),
            )
        except InvalidInputError as exc:
            raise ToolError(f"not remembered: {exc}") from None
        ctx.shown_memory_ids.add(memory.id)
        if not created:
            return f"Already remembered as #{memory.id}; nothing changed."
        ctx.notices.append(f"noted #{memory.id} {memory.content}")
        return f"Remembered as #{memory.id}."


class ForgetTool:
    name = "forget"
    description = _FORGET
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "description": "the memory's #id from the block"},
        },
        "required": ["id"],
    }

    def __init__(self, lore: Assembled) -> None:
        self._lore = lore

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        memory_id = parse_memory_id(args.get("id"))
        if memory_id not in ctx.shown_memory_ids:
            raise ToolError(
                f"#{memory_id} is not in this conversation's memory block; nothing was "
                "forgotten. Use an #id exactly as shown in the block."
            )
        try:
            forget_memory(
                self._lore,
                ctx.scope,
                memory_id,
                by=ctx.author,
                via="tool",
                now=ctx.now,
                turn=(ctx.session_id, ctx.message_index),
            )
        except (NotFoundError, InvalidInputError) as exc:
            raise ToolError(f"nothing was forgotten: {exc}") from None
        ctx.shown_memory_ids.discard(memory_id)
        ctx.notices.append(f"forgot #{memory_id}")
        return (
            f"Forgot #{memory_id}; it is erased from memory and search and will not appear "
            f"again. {KEPT_IN_TRANSCRIPT}"
        )


def parse_memory_id(value: object) -> int:
    """12, "12" or "#12" -> 12; anything else is a clear error."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("#").isdecimal():
        number = int(value.strip().lstrip("#"))
    else:
        raise ToolError("'id' must be a memory id such as 12 (shown as #12 in the block)")
    if number < 1:
        raise ToolError("'id' must be a memory id such as 12 (shown as #12 in the block)")
    return number
