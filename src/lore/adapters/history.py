"""A framework's conversation history kept in one Lore conversation's live transcript,
the same one `lore chat`, `lore serve` and `lore sessions` read.

Each item a framework hands over is stored as a Lore message: its role and plain text
(what Lore's own turn, search and session summaries read) with the framework's item
kept beside it under `framework` for an exact round trip. A message another program
wrote (a turn of `lore chat`, another framework) reaches a framework through its
adapter's `native` conversion, or not at all. Taking an item back marks it `cancelled`,
as a cancelled turn is, and clearing archives the session: nothing said is erased.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from lore.embedded import AsyncMemory, Memory
from lore.errors import InvalidInputError

if TYPE_CHECKING:
    from lore.messages import Message, Role, ToolCallRecord
    from lore.ports.sessions import LiveSession

__all__ = ["History", "block_text", "missing", "plain", "text_of"]


def missing(adapter: str, framework: str, extra: str) -> str:
    """The one line an adapter's import fails with when its framework is not installed."""
    from lore.extras import install_hint

    return f"lore.adapters.{adapter} needs {framework}: {install_hint(extra)}"


def plain(item: object, framework: str) -> dict[str, Any]:
    """`item` as JSON (what a transcript line holds), else InvalidInputError."""
    try:
        value = json.loads(json.dumps(item, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"a {framework} item cannot be stored as JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"a {framework} item must be a JSON object, not {item!r:.60}")
    return value


async def block_text(memory: Memory | AsyncMemory, scope: str | None) -> str:
    """The memory block's text as the scope's next turn injects it."""
    if isinstance(memory, AsyncMemory):
        return (await memory.block(scope)).text
    return (await asyncio.to_thread(memory.block, scope)).text


class History:
    """One conversation's history for one framework. `native` turns a message stored by
    someone else into the framework's item (None: the framework does not see it)."""

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        scope: str | None,
        framework: str,
        native: Callable[[Message], Any | None],
    ) -> None:
        from lore.keys import conversation_key

        if not isinstance(memory, Memory | AsyncMemory):
            raise InvalidInputError(f"a history needs a lore.Memory or AsyncMemory, not {memory!r}")
        self.memory = memory
        self.scope = memory.scope if scope is None else conversation_key(scope)
        self.framework = framework
        self._native = native

    def _session(self) -> LiveSession:
        session = self.memory.runtime.session(self.scope)
        session.refresh()
        return session

    def message(
        self,
        role: Role,
        text: str,
        item: dict[str, Any],
        *,
        tool_calls: Sequence[ToolCallRecord] = (),
        tool_call_id: str | None = None,
        name: str | None = None,
    ) -> Message:
        """A message holding `item`, stamped now (who said a user message: `user_name`)."""
        lore = self.memory.runtime
        message: Message = {
            "role": role,
            "content": text,
            "timestamp": lore.clock.now().astimezone(UTC).isoformat(timespec="seconds"),
        }
        if role == "user":
            message["author"] = lore.config.user_name
        if tool_calls:
            message["tool_calls"] = list(tool_calls)
        if tool_call_id is not None:
            message["tool_call_id"] = tool_call_id
        if name is not None:
            message["name"] = name
        message["framework"] = {"name": self.framework, "item": item}  # type: ignore[typeddict-unknown-key]
        return message

    def items(self, limit: int | None = None) -> list[Any]:
        """The framework's items, oldest first (the latest `limit` of them)."""
        if limit is not None and limit < 0:
            raise InvalidInputError(f"limit must be 0 or more, not {limit}")
        found = [item for _, item in self._indexed()]
        return found if limit is None else found[len(found) - limit :] if limit else []

    def _indexed(self) -> list[tuple[int, Any]]:
        found: list[tuple[int, Any]] = []
        for index, message in enumerate(self._session().messages):
            if message.get("cancelled"):
                continue
            kept = message.get("framework")
            if isinstance(kept, dict) and kept.get("name") == self.framework:
                found.append((index, kept.get("item")))
            elif (item := self._native(message)) is not None:
                found.append((index, item))
        return found

    def append(self, messages: Sequence[Message]) -> None:
        """Append the messages in one durable write."""
        if messages:
            self._session().append(list(messages))

    def pop(self) -> Any | None:
        """Take back the latest item (marked cancelled, kept in the transcript)."""
        session = self.memory.runtime.session(self.scope)
        with session.locked():
            found = self._indexed()
            if not found:
                return None
            index, item = found[-1]
            session.mark(index, cancelled=True)
            return item

    def close(self) -> None:
        """Archive the conversation and start a fresh one (its summary is written when
        Lore next runs its background work)."""
        from lore.sessions.closing import close_session

        close_session(self.memory.runtime, self.scope, reason="new")

    async def aclose(self) -> None:
        """Archive the conversation, summarise it in the background, start a fresh one."""
        from lore.sessions.closing import new_session

        if isinstance(self.memory, AsyncMemory):
            await new_session(self.memory.runtime, self.scope)
        else:
            await asyncio.to_thread(self.close)


def text_of(content: object) -> str:
    """The plain text of a framework's content: a text, or parts carrying `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return " ".join(text_of(part) for part in content if text_of(part)).strip()
    if isinstance(content, dict):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    return ""
