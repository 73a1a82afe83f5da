"""pydantic-ai's message history kept in Lore (`pip install 'lore-assistant[pydantic-ai]'`):
load it before a run, save the run's new messages after it.

    with Memory(home="agent-home") as memory:
        history = LoreMessageHistory(memory, "api:alice")
        result = agent.run_sync("I moved to Taipei", message_history=history.messages())
        history.save(result.new_messages())
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lore.adapters.history import History, missing, text_of
from lore.errors import InvalidInputError

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as exc:
    raise ImportError(missing("pydantic_ai", "pydantic-ai", "pydantic-ai")) from exc

if TYPE_CHECKING:
    from lore.embedded import AsyncMemory, Memory
    from lore.messages import Message, ToolCallRecord

__all__ = ["LoreMessageHistory"]

FRAMEWORK = "pydantic-ai"


class LoreMessageHistory:
    """The messages of Lore's live session for `scope` (default: the memory's own scope)
    as pydantic-ai's `message_history`; `clear` archives the conversation."""

    def __init__(self, memory: Memory | AsyncMemory, scope: str | None = None) -> None:
        self._history = History(memory, scope, FRAMEWORK, _native)
        self.scope = self._history.scope

    def messages(self) -> list[ModelMessage]:
        """The conversation so far, for `agent.run(..., message_history=...)`."""
        return ModelMessagesTypeAdapter.validate_python(self._history.items())

    async def amessages(self) -> list[ModelMessage]:
        return ModelMessagesTypeAdapter.validate_python(
            await asyncio.to_thread(self._history.items)
        )

    def save(self, messages: Sequence[ModelMessage]) -> None:
        """Append a run's new messages (`result.new_messages()`) in one write."""
        self._history.append(self._stored(messages))

    async def asave(self, messages: Sequence[ModelMessage]) -> None:
        await asyncio.to_thread(self._history.append, self._stored(messages))

    def clear(self) -> None:
        self._history.close()

    async def aclear(self) -> None:
        await self._history.aclose()

    def _stored(self, messages: Sequence[ModelMessage]) -> list[Message]:
        for message in messages:
            if not isinstance(message, ModelRequest | ModelResponse):
                raise InvalidInputError(
                    f"a message history takes pydantic-ai messages, not {message!r:.60}"
                )
        items = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
        return [self._message(m, item) for m, item in zip(messages, items, strict=True)]

    def _message(self, message: ModelMessage, item: dict[str, Any]) -> Message:
        history = self._history
        if isinstance(message, ModelResponse):
            text = " ".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls: list[ToolCallRecord] = [
                {"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args_as_json_str()}
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            return history.message("assistant", text, item, tool_calls=calls)
        said = [text_of(p.content) for p in message.parts if isinstance(p, UserPromptPart)]
        if said:
            return history.message("user", " ".join(said), item)
        returns = [p for p in message.parts if isinstance(p, ToolReturnPart)]
        if returns:
            text = "\n".join(p.model_response_str() for p in returns)
            first = returns[0]
            return history.message(
                "tool", text, item, tool_call_id=first.tool_call_id, name=first.tool_name
            )
        system = [p.content for p in message.parts if isinstance(p, SystemPromptPart)]
        return history.message("system", "\n".join(system), item)  # and retry prompts


def _native(message: Message) -> dict[str, Any] | None:
    """A text turn another program stored (`lore chat`, the gateway) as a pydantic-ai one."""
    text = text_of(message.get("content"))
    if not text or message.get("tool_calls"):
        return None
    if message["role"] == "user":
        made: ModelMessage = ModelRequest(parts=[UserPromptPart(text)])
    elif message["role"] == "assistant":
        made = ModelResponse(parts=[TextPart(text)])
    else:
        return None
    dumped: dict[str, Any] = ModelMessagesTypeAdapter.dump_python([made], mode="json")[0]
    return dumped
