"""Anthropic's Messages API over streaming HTTP: canonical messages in, text and tool calls out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx

from lore.errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    provider_error_for_status,
)
from lore.llm.base import ChatRequest, Completion, Message, StreamEvent, TextChunk, ToolCall, Usage
from lore.llm.retry import RetryPolicy, Sleep
from lore.llm.sse import HTTPProvider, decode_json, post_sse, wire_index, wire_object
from lore.messages import ContentPart, FinishReason

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider", "to_anthropic_messages"]

ANTHROPIC_VERSION = "2023-06-01"
CONTEXT_WINDOW = 200_000

# Error types Anthropic sends inside a stream, mapped to the HTTP status they stand for,
# so they are classified (and retried) exactly like the same failure before the stream.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}

_LABEL = "Anthropic"  # how errors name the provider
_JSON_INSTRUCTION = "Reply with one JSON object and nothing else."


class AnthropicProvider(HTTPProvider):
    """A Claude model through `POST /v1/messages` with `stream: true`."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = "https://api.anthropic.com",
        client: httpx.AsyncClient | None = None,
        context_window: int = 0,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        super().__init__(
            model,
            name=f"anthropic/{model}",
            context_window=context_window or CONTEXT_WINDOW,
            base_url=base_url,
            api_key=api_key,
            client=client,
            timeout=timeout,
            retry=retry,
            sleep=sleep,
        )

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        system, messages = to_anthropic_messages(request.system, request.messages)
        if request.json_mode:
            # The Messages API has no JSON switch; an instruction is the documented route.
            system = f"{system}\n\n{_JSON_INSTRUCTION}" if system else _JSON_INSTRUCTION
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        return body

    def _headers(self) -> dict[str, str]:
        return {
            "x-api-key": self._api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }

    async def _stream_once(self, body: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        events = post_sse(
            self._http(),
            f"{self.base_url}/v1/messages",
            headers=self._headers(),
            body=body,
            label="Anthropic",
            request_timeout=self._timeout,
        )
        reader = _MessageReader()
        async with aclosing(events):
            async for event in events:
                for data in decode_json(event.data, "Anthropic"):
                    text = reader.feed(data)
                    if text:
                        yield TextChunk(text)
                if reader.stopped:
                    break
        yield reader.completion()


class _MessageReader:
    """Folds Messages API stream events into text, tool calls, usage and a stop reason."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.blocks: dict[int, dict[str, Any]] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.stop_reason = ""
        self.stopped = False
        self.seen = False

    def feed(self, data: dict[str, Any]) -> str:
        self.seen = True
        kind = data.get("type")
        if kind == "message_start":
            self._count(wire_object(data, "message", _LABEL).get("usage"))
        elif kind == "content_block_start":
            block = wire_object(data, "content_block", _LABEL)
            self.blocks[wire_index(data, len(self.blocks), _LABEL)] = {
                "type": block.get("type"),
                "id": block.get("id", ""),
                "name": block.get("name", ""),
                "input": block.get("input"),
                "json": [],
            }
            if block.get("type") == "text" and block.get("text"):
                return self._add_text(str(block["text"]))
        elif kind == "content_block_delta":
            delta = wire_object(data, "delta", _LABEL)
            if delta.get("type") == "text_delta":
                return self._add_text(str(delta.get("text", "")))
            if delta.get("type") == "input_json_delta":
                started = self.blocks.get(wire_index(data, -1, _LABEL))
                if started is None:
                    raise ProviderResponseError(
                        "Anthropic sent tool input for a block it never started",
                        body=json.dumps(data),
                    )
                started["json"].append(str(delta.get("partial_json", "")))
        elif kind == "message_delta":
            reason = wire_object(data, "delta", _LABEL).get("stop_reason")
            if reason:
                self.stop_reason = str(reason)
            self._count(data.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise _stream_error(data)
        # ping, content_block_stop, thinking deltas and future event types carry nothing
        # we need; the API documents that new event types may appear.
        return ""

    def _add_text(self, text: str) -> str:
        self.text.append(text)
        return text

    def _count(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        # Cached prompt tokens are reported apart from `input_tokens`, yet fill the window.
        prompt = sum(
            int(usage.get(key) or 0)
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        self.input_tokens = max(self.input_tokens, prompt)
        # `output_tokens` in message_delta is cumulative, not an increment.
        self.output_tokens = max(self.output_tokens, int(usage.get("output_tokens") or 0))

    def completion(self) -> Completion:
        if not self.seen:
            raise ProviderConnectionError("Anthropic closed the stream without replying")
        calls = [
            ToolCall(id=block["id"], name=block["name"], arguments=_tool_arguments(block))
            for _, block in sorted(self.blocks.items())
            if block["type"] == "tool_use"
        ]
        reason: FinishReason
        if self.stop_reason:
            reason = _STOP_REASONS.get(self.stop_reason, "other")
        else:
            reason = "stop" if self.stopped else "incomplete"
        return Completion(
            text="".join(self.text),
            tool_calls=calls,
            usage=Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            finish_reason=reason,
        )


def to_anthropic_messages(system: str, messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Canonical messages to (system, Messages API messages).

    Tool results become user messages of `tool_result` blocks; consecutive messages of
    one role are merged, since the API wants user and assistant turns to alternate.
    """
    systems = [system] if system else []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            if message.get("content"):
                systems.append(str(message["content"]))
            continue
        if role == "tool":
            role = "user"
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": _text(message.get("content")) or "(no output)",
            }
            if message.get("is_error"):
                result["is_error"] = True
            blocks = [result]
        elif role == "assistant":
            blocks = _text_blocks(message.get("content"))
            for call in message.get("tool_calls") or []:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": _parse_input(call["arguments"]),
                    }
                )
        else:
            role = "user"
            blocks = _text_blocks(message.get("content"))
        if not blocks:
            continue  # the API rejects empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return "\n\n".join(systems), out


def _text_blocks(content: str | list[ContentPart] | None) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [dict(block) for block in content]
    text = _text(content)
    return [{"type": "text", "text": text}] if text.strip() else []


def _text(content: object) -> str:
    return "" if content is None else str(content)


def _parse_input(arguments: Any) -> dict[str, Any]:
    """Tool input must be an object; the model's JSON text may be empty or broken."""
    if isinstance(arguments, dict):
        return arguments
    if not arguments:
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_arguments(block: dict[str, Any]) -> str:
    if block["json"]:
        return "".join(block["json"]) or "{}"
    start = block.get("input")
    return json.dumps(start, ensure_ascii=False) if start else "{}"


def _stream_error(data: dict[str, Any]) -> ProviderError:
    error = data.get("error") or {}
    body = json.dumps(data, ensure_ascii=False)
    status = _ERROR_STATUS.get(str(error.get("type")))
    if status is not None:
        return provider_error_for_status(status, body, provider="Anthropic")
    detail = " ".join(str(error.get("message", body)).split())[:200]
    return ProviderError(f"Anthropic reported an error: {detail}", body=body)
