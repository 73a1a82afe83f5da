"""The Anthropic provider on the wire: Messages API requests and streamed events.

HTTP is faked at the transport (`httpx.MockTransport`), never by patching classes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.config import Config, ModelSpec
from lore.errors import (
    AuthenticationError,
    ConfigError,
    ProviderError,
    ProviderResponseError,
    ProviderServerError,
    RateLimitError,
)
from lore.llm.anthropic import AnthropicProvider
from lore.llm.base import ChatRequest, Completion, StreamEvent, TextChunk, ToolCall, ToolSpec, Usage
from lore.llm.registry import make_provider
from lore.llm.retry import RetryPolicy

Handler = Callable[[httpx.Request], httpx.Response]


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


async def in_pieces(data: bytes, size: int = 11) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def stream_response(data: bytes) -> httpx.Response:
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=in_pieces(data)
    )


def message_start(input_tokens: int = 25) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-5",
            "stop_reason": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            }
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def finish(reason: str = "end_turn", output_tokens: int = 12) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def text_reply(text: str) -> bytes:
    return sse(message_start(), *text_block(0, text), *finish())


OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def provider(handler: Handler, sleeps: Sleeps | None = None) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-sonnet-4-5",
        api_key="sk-ant-test",
        client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        retry=RetryPolicy(rng=lambda: 0.0),
        sleep=sleeps or Sleeps(),
    )


async def run(model: AnthropicProvider, request: ChatRequest | None = None) -> list[StreamEvent]:
    request = request or ChatRequest(
        system="Be brief.", messages=[{"role": "user", "content": "hi"}]
    )
    return [event async for event in model.stream(request)]


def texts(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_text_and_tool_use_with_input_json_deltas_are_assembled() -> None:
    body = sse(
        message_start(input_tokens=472),
        {"type": "ping"},
        *text_block(0, "Let me ", "look that up."),
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "memory_search",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "Hua'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'lien"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "reminders_list",
                "input": {},
            },
        },
        {"type": "content_block_stop", "index": 2},
        *finish("tool_use", output_tokens=89),
    )
    events = await run(provider(lambda request: stream_response(body)))
    assert texts(events) == "Let me look that up."
    assert events[-1] == Completion(
        text="Let me look that up.",
        tool_calls=[
            ToolCall("toolu_01", "memory_search", '{"query": "Hualien"}'),
            ToolCall("toolu_02", "reminders_list", "{}"),
        ],
        usage=Usage(input_tokens=472, output_tokens=89),
        finish_reason="tool_calls",
    )


async def test_request_converts_messages_tools_and_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return stream_response(text_reply("ok"))

    request = ChatRequest(
        system="You are Lore.",
        messages=[
            {"role": "user", "content": "Hi", "author": "john"},
            {"role": "user", "content": "Where do I live?", "author": "john"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"id": "toolu_1", "name": "memory_search", "arguments": '{"query": "home"}'},
                    {"id": "toolu_2", "name": "reminders_list", "arguments": ""},
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "toolu_1",
                "name": "memory_search",
                "content": "Hualien",
            },
            {
                "role": "tool",
                "tool_call_id": "toolu_2",
                "name": "reminders_list",
                "content": "none",
            },
            {"role": "assistant", "content": "You live in Hualien."},
        ],
        tools=[ToolSpec("memory_search", "Search memories", {"type": "object", "properties": {}})],
        max_tokens=512,
    )
    await run(provider(handler), request)
    sent = seen[0]
    assert str(sent.url) == "https://api.anthropic.com/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    body = json.loads(sent.content)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["stream"] is True
    assert body["max_tokens"] == 512
    assert body["system"] == "You are Lore."
    assert body["tools"] == [
        {
            "name": "memory_search",
            "description": "Search memories",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hi"},
                {"type": "text", "text": "Where do I live?"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "memory_search",
                    "input": {"query": "home"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "reminders_list", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Hualien"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "none"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "You live in Hualien."}]},
    ]


async def test_json_mode_asks_for_json_in_the_system_prompt() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return stream_response(text_reply("{}"))

    request = ChatRequest(
        system="Extract facts.", messages=[{"role": "user", "content": "x"}], json_mode=True
    )
    await run(provider(handler), request)
    system = json.loads(seen[0].content)["system"]
    assert system.startswith("Extract facts.") and "JSON" in system


async def test_overloaded_error_event_before_text_is_retried_into_one_reply() -> None:
    responses = iter(
        [stream_response(sse(message_start(), OVERLOADED)), stream_response(text_reply("Hi!"))]
    )
    sleeps = Sleeps()
    events = await run(provider(lambda request: next(responses), sleeps))
    assert texts(events) == "Hi!"
    assert sleeps.delays == [1.0]


async def test_overloaded_error_event_after_text_is_raised_as_529() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return stream_response(sse(message_start(), *text_block(0, "Half"), OVERLOADED))

    with pytest.raises(ProviderServerError) as caught:
        await run(provider(handler))
    assert caught.value.status == 529
    assert "overloaded_error" in caught.value.body
    assert len(calls) == 1


async def test_rate_limit_error_event_is_a_rate_limit_error() -> None:
    event = {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many"}}
    body = sse(message_start(), *text_block(0, "x"), event)
    with pytest.raises(RateLimitError):
        await run(provider(lambda request: stream_response(body)))


async def test_an_unknown_error_event_is_one_line() -> None:
    event = {"type": "error", "error": {"type": "new_error", "message": "it broke\n  badly\n"}}
    body = sse(message_start(), event)
    with pytest.raises(ProviderError) as caught:
        await run(provider(lambda request: stream_response(body)))
    assert str(caught.value) == "Anthropic reported an error: it broke badly"


async def test_http_529_with_retry_after_is_retried_after_that_delay() -> None:
    responses = iter(
        [
            httpx.Response(
                529,
                headers={"retry-after": "4"},
                json={"type": "error", "error": OVERLOADED["error"]},
            ),
            stream_response(text_reply("back")),
        ]
    )
    sleeps = Sleeps()
    events = await run(provider(lambda request: next(responses), sleeps))
    assert texts(events) == "back"
    assert sleeps.delays == [4.0]


async def test_401_raises_authentication_error_with_status_and_body() -> None:
    body = '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(401, text=body)

    with pytest.raises(AuthenticationError, match="invalid x-api-key") as caught:
        await run(provider(handler))
    assert (caught.value.status, caught.value.body) == (401, body)
    assert len(calls) == 1


async def test_malformed_data_line_raises_response_error() -> None:
    body = sse(message_start()) + b'event: content_block_delta\ndata: {"type": "content_blo\n\n'
    with pytest.raises(ProviderResponseError):
        await run(provider(lambda request: stream_response(body)))


async def test_unknown_event_types_are_ignored() -> None:
    body = sse(
        message_start(),
        {"type": "future_event", "detail": 1},
        *text_block(0, "fine"),
        *finish(),
    )
    events = await run(provider(lambda request: stream_response(body)))
    assert events[-1] == Completion(
        text="fine", usage=Usage(input_tokens=25, output_tokens=12), finish_reason="stop"
    )


async def test_stream_cut_before_message_stop_still_completes_as_incomplete() -> None:
    body = sse(message_start(), *text_block(0, "partial"))
    events = await run(provider(lambda request: stream_response(body)))
    assert isinstance(events[-1], Completion)
    assert events[-1].text == "partial"
    assert events[-1].finish_reason == "incomplete"


@pytest.mark.parametrize(
    ("event", "said"),
    [
        ({"type": "content_block_start", "index": 0, "content_block": "文本"}, "content_block"),
        ({"type": "content_block_delta", "index": 0, "delta": ["текст"]}, "delta is not"),
        ({"type": "content_block_start", "index": "first", "content_block": {}}, "index"),
        ({"type": "message_start", "message": "msg_1"}, "message is not an object"),
    ],
)
async def test_a_malformed_event_is_a_one_line_response_error(
    event: dict[str, Any], said: str
) -> None:
    body = sse(message_start(), *text_block(0, "你好"), event, *finish())
    with pytest.raises(ProviderResponseError) as caught:
        await run(provider(lambda request: stream_response(body)))
    assert f"Anthropic sent a malformed reply: {said}" in str(caught.value)
    assert "\n" not in str(caught.value) and caught.value.body


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [("max_tokens", "length"), ("refusal", "content_filter"), ("pause_turn", "other")],
)
async def test_stop_reasons_map_to_the_finish_reasons_lore_knows(
    stop_reason: str, finish_reason: str
) -> None:
    body = sse(message_start(), *text_block(0, "Привет"), *finish(stop_reason))
    events = await run(provider(lambda request: stream_response(body)))
    assert isinstance(events[-1], Completion) and events[-1].finish_reason == finish_reason


def test_registry_refuses_anthropic_without_a_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        make_provider(Config(home=tmp_path), ModelSpec("anthropic", "claude-sonnet-4-5"))


def test_registry_builds_anthropic_with_a_200k_window(tmp_path: Path) -> None:
    model = make_provider(
        Config(home=tmp_path, anthropic_api_key="k"), ModelSpec("anthropic", "claude-x")
    )
    assert model.name == "anthropic/claude-x"
    assert model.context_window == 200_000
