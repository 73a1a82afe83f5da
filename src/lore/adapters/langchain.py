"""LangChain over Lore (`pip install 'lore-assistant[langchain]'`): a chat message history
kept in Lore's transcript of a conversation, and a retriever over `Memory.search`.

    with Memory(home="agent-home") as memory:
        history = LoreChatMessageHistory(memory, "api:alice")
        docs = LoreRetriever(memory=memory, scope="api:alice").invoke("where does Alice live?")
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lore.adapters.history import History, missing, text_of
from lore.embedded import AsyncMemory, Memory
from lore.errors import InvalidInputError

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        message_to_dict,
        messages_from_dict,
    )
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field
except ImportError as exc:
    raise ImportError(missing("langchain", "langchain-core", "langchain")) from exc

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )

    from lore.messages import Message, Role, ToolCallRecord
    from lore.records import SearchHit

__all__ = ["LoreChatMessageHistory", "LoreRetriever"]

FRAMEWORK = "langchain"
_ROLES: dict[str, Role] = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


class LoreChatMessageHistory(BaseChatMessageHistory):
    """LangChain's chat message history as the messages of Lore's live session for
    `scope` (default: the memory's own scope); `clear` archives the conversation."""

    def __init__(self, memory: Memory | AsyncMemory, scope: str | None = None) -> None:
        self._history = History(memory, scope, FRAMEWORK, _native)
        self.scope = self._history.scope

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return messages_from_dict(self._history.items())

    async def aget_messages(self) -> list[BaseMessage]:
        return messages_from_dict(await asyncio.to_thread(self._history.items))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self._history.append([self._message(message) for message in messages])

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        stored = [self._message(message) for message in messages]
        await asyncio.to_thread(self._history.append, stored)

    def clear(self) -> None:
        self._history.close()

    async def aclear(self) -> None:
        await self._history.aclose()

    def _message(self, message: BaseMessage) -> Message:
        if not isinstance(message, BaseMessage):
            raise InvalidInputError(f"a chat history takes LangChain messages, not {message!r:.60}")
        item = message_to_dict(message)
        role = _ROLES.get(message.type, "assistant")  # a chat or function message: assistant
        calls: list[ToolCallRecord] = [
            {
                "id": str(call.get("id") or ""),
                "name": call["name"],
                "arguments": json.dumps(call["args"]),
            }
            for call in (message.tool_calls if isinstance(message, AIMessage) else [])
        ]
        call_id = getattr(message, "tool_call_id", None) if role == "tool" else None
        return self._history.message(
            role, text_of(message.content), item, tool_calls=calls, tool_call_id=call_id
        )


def _native(message: Message) -> dict[str, Any] | None:
    """A text turn another program stored (`lore chat`, the gateway) as a LangChain one."""
    text = text_of(message.get("content"))
    if not text or message.get("tool_calls"):
        return None
    if message["role"] == "user":
        return message_to_dict(HumanMessage(text))
    if message["role"] == "assistant":
        return message_to_dict(AIMessage(text))
    return None


class LoreRetriever(BaseRetriever):
    """Memories, notes and archived messages matching a query, best first, as LangChain
    documents (`Memory.search`); each document's metadata is the hit's provenance."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory | AsyncMemory
    scope: str | None = None
    when: str | None = None
    limit: int = Field(default=10, ge=1, le=100)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if isinstance(self.memory, AsyncMemory):
            raise InvalidInputError("a retriever over lore.AsyncMemory is called with ainvoke")
        hits = self.memory.search(query, scope=self.scope, when=self.when, limit=self.limit)
        return [_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if isinstance(self.memory, AsyncMemory):
            hits = await self.memory.search(
                query, scope=self.scope, when=self.when, limit=self.limit
            )
        else:
            hits = await asyncio.to_thread(
                self.memory.search, query, scope=self.scope, when=self.when, limit=self.limit
            )
        return [_document(hit) for hit in hits]


def _document(hit: SearchHit) -> Document:
    metadata = {
        "kind": hit.kind,
        "id": hit.id,
        "locator": hit.locator,
        "score": hit.score,
        "time": hit.time.isoformat(),
        "scope": hit.scope,
        "source": dict(hit.source),
        "speaker": hit.speaker,
        "superseded_by": hit.superseded_by,
    }
    return Document(page_content=hit.text, metadata=metadata, id=hit.locator)
