"""A scripted provider for tests and demos: queued replies, tool calls, errors, delays.

    model = ScriptedProvider()
    model.reply("Hello!")
    model.tool_call("remember", {"content": "I live in Hualien"}).reply("Noted.")
    model.fail(ProviderServerError("down", status=503))
    ...
    model.requests[0].system  # every request is recorded

Each queued step answers one request. A step may be a function of the request, so a
test can answer differently by what it sees (e.g. extraction vs chat calls).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from lore.errors import ProviderResponseError
from lore.llm.base import ChatRequest, Completion, StreamEvent, TextChunk, ToolCall, Usage

__all__ = ["ScriptedProvider", "Step"]


@dataclass
class Step:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: BaseException | None = None
    delay: float = 0.0
    # Raise after streaming the text (a failure mid-reply).
    error_after_text: BaseException | None = None
    chunk_size: int = 8


Responder = Callable[[ChatRequest], "Step | str"]


class ScriptedProvider:
    """A `Provider` whose answers are queued by the test."""

    supports_tools = True

    def __init__(self, name: str = "scripted", context_window: int = 32_000) -> None:
        self.name = name
        self.context_window = context_window
        self.requests: list[ChatRequest] = []
        self._steps: deque[Step | Responder] = deque()
        self._calls = 0
        self.default: Step | Responder | None = None

    # -- queueing ----------------------------------------------------------------

    def reply(self, text: str, *, delay: float = 0.0) -> ScriptedProvider:
        self._steps.append(Step(text=text, delay=delay))
        return self

    def tool_call(
        self, name: str, arguments: dict[str, Any] | str, *, text: str = ""
    ) -> ScriptedProvider:
        args = (
            arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        )
        self._calls += 1
        call = ToolCall(id=f"call_{self._calls}", name=name, arguments=args)
        self._steps.append(Step(text=text, tool_calls=[call]))
        return self

    def tool_calls(self, calls: list[tuple[str, dict[str, Any]]]) -> ScriptedProvider:
        batch = []
        for name, arguments in calls:
            self._calls += 1
            batch.append(ToolCall(f"call_{self._calls}", name, json.dumps(arguments)))
        self._steps.append(Step(tool_calls=batch))
        return self

    def fail(self, error: BaseException, *, after_text: str = "") -> ScriptedProvider:
        if after_text:
            self._steps.append(Step(text=after_text, error_after_text=error))
        else:
            self._steps.append(Step(error=error))
        return self

    def respond_with(self, responder: Responder) -> ScriptedProvider:
        self._steps.append(responder)
        return self

    def step(self, step: Step) -> ScriptedProvider:
        self._steps.append(step)
        return self

    @property
    def pending(self) -> int:
        return len(self._steps)

    # -- Provider ----------------------------------------------------------------

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if self._steps:
            item = self._steps.popleft()
        elif self.default is not None:
            item = self.default
        else:
            raise ProviderResponseError(
                f"scripted provider has no reply queued for request #{len(self.requests)}"
            )
        step = item if isinstance(item, Step) else _as_step(item(request))
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.error is not None:
            raise step.error
        for start in range(0, len(step.text), step.chunk_size):
            yield TextChunk(step.text[start : start + step.chunk_size])
            await asyncio.sleep(0)
        if step.error_after_text is not None:
            raise step.error_after_text
        yield Completion(
            text=step.text,
            tool_calls=list(step.tool_calls),
            usage=Usage(input_tokens=_rough_tokens(request), output_tokens=len(step.text) // 4),
            finish_reason="tool_calls" if step.tool_calls else "stop",
        )

    async def aclose(self) -> None:
        return None


def _as_step(value: Step | str) -> Step:
    return value if isinstance(value, Step) else Step(text=value)


def _rough_tokens(request: ChatRequest) -> int:
    chars = len(request.system) + sum(len(str(m.get("content") or "")) for m in request.messages)
    return chars // 4
