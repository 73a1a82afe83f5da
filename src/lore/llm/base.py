"""The provider seam: one request shape, one stream of events, any model behind it.

Messages are `lore.messages.Message` records, in the one shape the live session stores;
providers translate them to their wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from lore.messages import FinishReason, Message, ToolCallRecord, content_text

__all__ = [
    "ChatRequest",
    "Completion",
    "FinishReason",
    "Message",
    "Provider",
    "StreamEvent",
    "TextChunk",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "complete",
    "content_text",
]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it

    def to_dict(self) -> ToolCallRecord:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ChatRequest:
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 4096
    temperature: float | None = None
    # Asks for a JSON reply where the provider supports it (extraction, summaries).
    json_mode: bool = False


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: FinishReason = "stop"


StreamEvent = TextChunk | Completion


class Provider(Protocol):
    """A chat model. `stream` yields text chunks, then exactly one `Completion`."""

    name: str
    context_window: int
    supports_tools: bool

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


async def complete(provider: Provider, request: ChatRequest) -> Completion:
    """Run a request to the end and return only the final completion."""
    async for event in provider.stream(request):
        if isinstance(event, Completion):
            return event
    from lore.errors import ProviderResponseError

    raise ProviderResponseError(f"{provider.name} ended the reply without completing it")
