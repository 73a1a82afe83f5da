"""OpenAI-compatible chat completions over streaming HTTP (OpenAI, OpenRouter, Ollama, vLLM,
llama.cpp server), plus the SSE reader that the Anthropic provider shares."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import asdict
from typing import Any
from urllib.parse import urlsplit

import httpx

from lore.errors import (
    ProviderConnectionError,
    ProviderError,
    provider_error_for_status,
)
from lore.llm.base import ChatRequest, Completion, Message, StreamEvent, TextChunk, ToolCall, Usage
from lore.llm.retry import RetryPolicy, Sleep
from lore.llm.sse import HTTPProvider, decode_json, post_sse, wire_object, wire_objects
from lore.messages import ContentPart, FinishReason, finish_reason

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "OpenAIProvider",
    "known_context_window",
    "to_openai_messages",
]

DEFAULT_CONTEXT_WINDOW = 32_768

# Longest matching prefix wins, so "gpt-4o-mini" finds "gpt-4o" and "o1-mini" beats "o1".
_CONTEXT_WINDOWS = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "chatgpt-4o": 128_000,
    "o1-mini": 128_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama3": 8_192,
    "llama4": 1_048_576,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral-large": 131_072,
    "mistral-nemo": 131_072,
    "mistral-small": 32_768,
    "mistral": 32_768,
    "mixtral": 32_768,
    "gemma2": 8_192,
    "gemma3": 131_072,
    "phi4": 16_384,
    "deepseek-r1": 131_072,
    "deepseek-v3": 131_072,
    "claude": 200_000,
}


def known_context_window(model: str) -> int:
    """The model's context window from the table, else `DEFAULT_CONTEXT_WINDOW`.

    Accepts routed and tagged names: "meta-llama/Llama-3.1-8B", "qwen2.5:7b".
    """
    key = model.rsplit("/", 1)[-1].split(":", 1)[0].lower().replace("llama-", "llama")
    best = ""
    for prefix in _CONTEXT_WINDOWS:
        if key.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return _CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW


# -- the provider -------------------------------------------------------------------


class OpenAIProvider(HTTPProvider):
    """A chat model behind any OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str = "",
        base_url: str = "https://api.openai.com/v1",
        client: httpx.AsyncClient | None = None,
        context_window: int = 0,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        name: str = "",
        label: str = "",
    ) -> None:
        super().__init__(
            model,
            name=name or f"openai/{model}",
            context_window=context_window or known_context_window(model),
            base_url=base_url,
            api_key=api_key,
            client=client,
            timeout=timeout,
            retry=retry,
            sleep=sleep,
        )
        self._official = _is_official_openai(self.base_url)
        self.label = label or ("OpenAI" if self._official else urlsplit(self.base_url).netloc)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's reasoning models refuse `max_tokens`; most compatible servers only know it.
        body["max_completion_tokens" if self._official else "max_tokens"] = request.max_tokens
        if request.temperature is not None and not _is_reasoning_model(self.model):
            body["temperature"] = request.temperature
        if request.tools:
            # ToolSpec's fields are exactly the function's name, description, parameters.
            body["tools"] = [{"type": "function", "function": asdict(t)} for t in request.tools]
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _stream_once(self, body: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        events = post_sse(
            self._http(),
            f"{self.base_url}/chat/completions",
            headers=self._headers(),
            body=body,
            label=self.label,
            request_timeout=self._timeout,
        )
        reader = _ReplyReader(self.label)
        async with aclosing(events):
            async for event in events:
                if event.data.strip() == "[DONE]":
                    reader.done = True
                    break
                for chunk in decode_json(event.data, self.label):
                    for text in reader.feed(chunk):
                        yield TextChunk(text)
        yield reader.completion()


class _ReplyReader:
    """Accumulates streamed chunks into text, tool calls, usage and a finish reason."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.text: list[str] = []
        self.calls: list[dict[str, str]] = []
        self._open: dict[int | None, int] = {}  # the wire's index -> the call it continues
        self.usage: Usage | None = None
        self.finish_reason = ""
        self.done = False
        self.seen = False

    def feed(self, chunk: dict[str, Any]) -> list[str]:
        self.seen = True
        error = chunk.get("error")
        if error:
            raise _stream_error(error, self.label)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
            )
        texts: list[str] = []
        for choice in wire_objects(chunk, "choices", self.label):
            delta = wire_object(choice, "delta", self.label)
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                texts.append(content)
            for call in wire_objects(delta, "tool_calls", self.label):
                self._add_call_delta(call, wire_object(call, "function", self.label))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return texts

    def _add_call_delta(self, delta: dict[str, Any], function: dict[str, Any]) -> None:
        # The wire's index says which call a fragment continues, but not every server keeps
        # to it: Ollama numbers every call of a parallel batch 0, others send no index.
        # A new id is always a new call; a fragment without one continues its index's call.
        index = delta.get("index") if isinstance(delta.get("index"), int) else None
        call_id = str(delta.get("id") or "")
        position = self._open.get(index)
        if call_id and (position is None or self.calls[position]["id"] not in ("", call_id)):
            known = [n for n, call in enumerate(self.calls) if call["id"] == call_id]
            position = known[0] if known else None
        if position is None:
            self.calls.append({"id": "", "name": "", "arguments": ""})
            position = len(self.calls) - 1
        self._open[index] = position
        slot = self.calls[position]
        if call_id:
            slot["id"] = call_id
        if function.get("name") and not slot["name"]:
            slot["name"] = str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot["arguments"] += arguments
        elif isinstance(arguments, dict):
            slot["arguments"] += json.dumps(arguments, ensure_ascii=False)

    def completion(self) -> Completion:
        if not self.seen:
            # Closed before a single event: nothing was shown, so a retry is safe.
            raise ProviderConnectionError(f"{self.label} closed the stream without replying")
        calls = [
            ToolCall(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments=slot["arguments"],
            )
            for index, slot in enumerate(self.calls)
        ]
        reason: FinishReason
        if self.finish_reason:
            reason = finish_reason(self.finish_reason)
        else:
            reason = "stop" if self.done else "incomplete"
        if calls and reason == "stop":
            reason = "tool_calls"  # some servers report "stop" after tool calls
        return Completion(
            text="".join(self.text), tool_calls=calls, usage=self.usage, finish_reason=reason
        )


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Canonical messages to chat-completions messages; extra keys like "author" drop."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        role = message["role"]
        content = message.get("content")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            item: dict[str, Any] = {"role": "assistant", "content": content or None}
            if calls:
                item["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
                    }
                    for call in calls
                ]
            else:
                item["content"] = content or ""
            out.append(item)
        elif role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.get("tool_call_id", ""),
                    "content": _as_text(content),
                }
            )
        else:
            out.append({"role": role, "content": _as_text(content)})
    return out


def _stream_error(error: Any, label: str) -> ProviderError:
    """An error object sent inside a 200 stream (OpenRouter, vLLM) keeps its status code."""
    body = json.dumps({"error": error}, ensure_ascii=False)
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, str) and code.strip().isdecimal():
        code = int(code)  # LiteLLM's proxy sends "429"
    if isinstance(code, int) and 400 <= code < 600:
        return provider_error_for_status(code, body, provider=label)
    message = error.get("message") if isinstance(error, dict) else error
    detail = " ".join(str(message).split())[:200]
    return ProviderError(f"{label} reported an error mid-reply: {detail}", body=body)


def _as_text(content: str | list[ContentPart] | None) -> str | list[ContentPart]:
    return "" if content is None else content


def _is_official_openai(base_url: str) -> bool:
    return urlsplit(base_url).hostname == "api.openai.com"


def _is_reasoning_model(model: str) -> bool:
    # These accept only the default temperature.
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith("gpt-5") or (len(name) > 1 and name[0] == "o" and name[1].isdigit())
