"""The OpenAI-compatible provider on the wire: requests built and SSE replies parsed.

HTTP is faked at the transport (`httpx.MockTransport`); one test runs a real local server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.config import Config, ModelSpec
from lore.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderServerError,
)
from lore.llm.base import ChatRequest, Completion, StreamEvent, TextChunk, ToolCall, ToolSpec, Usage
from lore.llm.openai import OpenAIProvider, known_context_window
from lore.llm.registry import make_provider
from lore.llm.retry import RetryPolicy

Handler = Callable[[httpx.Request], httpx.Response]


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def sse(*payloads: dict[str, Any] | str, done: bool = True) -> bytes:
    lines = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


async def in_pieces(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    """Network-sized pieces that cut through lines and UTF-8 characters."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def stream_response(data: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(
        status, headers={"content-type": "text/event-stream"}, content=in_pieces(data)
    )


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_reply(text: str) -> bytes:
    return sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": text}),
        chunk({}, "stop"),
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
    )


def provider(handler: Handler, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAIProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIProvider(
        kwargs.pop("model", "gpt-4o-mini"),
        api_key=kwargs.pop("api_key", "sk-test"),
        client=client,
        retry=RetryPolicy(rng=lambda: 0.0),
        sleep=sleeps or Sleeps(),
        **kwargs,
    )


async def run(model: OpenAIProvider, request: ChatRequest | None = None) -> list[StreamEvent]:
    request = request or ChatRequest(
        system="Be brief.", messages=[{"role": "user", "content": "hi"}]
    )
    return [event async for event in model.stream(request)]


def texts(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_text_and_tool_call_deltas_are_assembled_across_chunks() -> None:
    body = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Let me "}),
        chunk({"content": "check 花蓮."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "memory_search", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"que'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ry": "花蓮"}'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "remind", "arguments": "{}"},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
        {
            "id": "chatcmpl-1",
            "choices": [],
            "usage": {"prompt_tokens": 42, "completion_tokens": 17},
        },
    )
    events = await run(provider(lambda request: stream_response(body)))
    assert [e for e in events if isinstance(e, TextChunk)] == [
        TextChunk("Let me "),
        TextChunk("check 花蓮."),
    ]
    assert events[-1] == Completion(
        text="Let me check 花蓮.",
        tool_calls=[
            ToolCall("call_a", "memory_search", '{"query": "花蓮"}'),
            ToolCall("call_b", "remind", "{}"),
        ],
        usage=Usage(input_tokens=42, output_tokens=17),
        finish_reason="tool_calls",
    )


def call_delta(index: int | None = None, **fields: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {} if index is None else {"index": index}
    if "id" in fields:
        delta["id"] = fields.pop("id")
    delta["function"] = fields
    return chunk({"tool_calls": [delta]})


async def tool_calls_of(*chunks: dict[str, Any]) -> list[ToolCall]:
    body = sse(*chunks, chunk({}, "tool_calls"))
    events = await run(provider(lambda request: stream_response(body)))
    final = events[-1]
    assert isinstance(final, Completion)
    return final.tool_calls


async def test_parallel_calls_that_all_say_index_0_stay_apart() -> None:
    # Ollama numbers every call of a parallel batch 0; each new call has its own id.
    calls = await tool_calls_of(
        call_delta(0, id="call_a", name="memory_search", arguments=""),
        call_delta(0, arguments='{"query": '),
        call_delta(0, arguments='"tea"}'),
        call_delta(0, id="call_b", name="list_reminders", arguments=""),
        call_delta(0, arguments="{}"),
    )

    assert calls == [
        ToolCall("call_a", "memory_search", '{"query": "tea"}'),
        ToolCall("call_b", "list_reminders", "{}"),
    ]


async def test_calls_without_an_index_or_with_their_id_repeated_are_assembled() -> None:
    calls = await tool_calls_of(
        call_delta(id="call_a", name="remember", arguments='{"content": "x"}'),
        call_delta(id="call_b", name="forget", arguments='{"id": 3}'),
        call_delta(1, id="call_c", name="memory_search", arguments='{"query"'),
        call_delta(1, id="call_c", arguments=': "tea"}'),
    )

    assert calls == [
        ToolCall("call_a", "remember", '{"content": "x"}'),
        ToolCall("call_b", "forget", '{"id": 3}'),
        ToolCall("call_c", "memory_search", '{"query": "tea"}'),
    ]


async def test_request_body_translates_canonical_messages_and_tools() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return stream_response(text_reply("ok"))

    request = ChatRequest(
        system="You are Lore.",
        messages=[
            {"role": "user", "content": "Where do I live?", "author": "john"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call_1", "name": "memory_search", "arguments": '{"q":1}'}],
            },
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "name": "memory_search",
                "content": "Hualien",
            },
            {"role": "assistant", "content": "You live in Hualien."},
        ],
        tools=[ToolSpec("memory_search", "Search memories", {"type": "object", "properties": {}})],
        max_tokens=300,
        temperature=0.5,
        json_mode=True,
    )
    await run(provider(handler), request)
    sent = seen[0]
    assert sent.method == "POST"
    assert str(sent.url) == "https://api.openai.com/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = json.loads(sent.content)
    assert body["model"] == "gpt-4o-mini"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 300
    assert body["temperature"] == 0.5
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == [
        {"role": "system", "content": "You are Lore."},
        {"role": "user", "content": "Where do I live?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "memory_search", "arguments": '{"q":1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Hualien"},
        {"role": "assistant", "content": "You live in Hualien."},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "memory_search",
                "description": "Search memories",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]


async def test_ollama_uses_its_v1_endpoint_without_an_api_key(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return stream_response(text_reply("hi"))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    config = Config(home=tmp_path, ollama_host="127.0.0.1:11434")
    model = make_provider(config, ModelSpec("ollama", "qwen2.5:7b"), client=client)
    assert isinstance(model, OpenAIProvider)
    events = await run(model)
    assert texts(events) == "hi"
    assert str(seen[0].url) == "http://127.0.0.1:11434/v1/chat/completions"
    assert "authorization" not in seen[0].headers
    assert json.loads(seen[0].content)["max_tokens"] == 4096
    assert model.name == "ollama/qwen2.5:7b"


async def test_401_raises_authentication_error_with_status_and_body() -> None:
    body = '{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(401, text=body)

    with pytest.raises(AuthenticationError) as caught:
        await run(provider(handler))
    assert caught.value.status == 401
    assert caught.value.body == body
    assert "Incorrect API key provided" in str(caught.value)
    assert len(calls) == 1


async def test_400_is_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(400, json={"error": {"message": "context_length_exceeded"}})

    with pytest.raises(BadRequestError):
        await run(provider(handler))
    assert len(calls) == 1


async def test_503_then_success_is_retried_into_one_reply() -> None:
    responses = iter(
        [httpx.Response(503, text="upstream unavailable"), stream_response(text_reply("Hello!"))]
    )
    sleeps = Sleeps()
    events = await run(provider(lambda request: next(responses), sleeps))
    assert texts(events) == "Hello!"
    assert [e for e in events if isinstance(e, Completion)][0].text == "Hello!"
    assert sleeps.delays == [1.0]


async def test_429_retry_after_is_honoured() -> None:
    responses = iter(
        [
            httpx.Response(429, headers={"Retry-After": "7"}, json={"error": {"message": "slow"}}),
            stream_response(text_reply("ok")),
        ]
    )
    sleeps = Sleeps()
    await run(provider(lambda request: next(responses), sleeps))
    assert sleeps.delays == [7.0]


async def test_error_after_text_was_shown_is_not_retried() -> None:
    calls: list[int] = []

    async def dropped() -> AsyncIterator[bytes]:
        yield sse(chunk({"content": "The answer is"}), done=False)
        raise httpx.ReadError("connection reset by peer")

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, content=dropped())

    seen: list[StreamEvent] = []
    with pytest.raises(ProviderConnectionError):
        async for event in provider(handler).stream(ChatRequest(system="", messages=[])):
            seen.append(event)
    assert seen == [TextChunk("The answer is")]
    assert len(calls) == 1


async def test_error_object_inside_the_stream_is_classified_by_its_code() -> None:
    body = sse(chunk({"content": "Hel"}), {"error": {"message": "Provider down", "code": 502}})
    with pytest.raises(ProviderServerError) as caught:
        await run(provider(lambda request: stream_response(body)))
    assert caught.value.status == 502


async def test_an_error_code_sent_as_text_is_classified_and_retried_before_any_text() -> None:
    # LiteLLM's proxy sends "code": "429"; the retry decision must still see a 429.
    replies = [
        sse({"error": {"message": "Rate limit\nreached", "code": "429"}}, done=False),
        text_reply("hello"),
    ]
    sleeps = Sleeps()
    events = await run(provider(lambda request: stream_response(replies.pop(0)), sleeps))
    assert texts(events) == "hello" and len(sleeps.delays) == 1


async def test_an_unclassified_error_inside_the_stream_is_one_line() -> None:
    body = sse({"error": {"message": "model crashed\n  at layer 3\n", "code": "oops"}})
    with pytest.raises(ProviderError) as caught:
        await run(provider(lambda request: stream_response(body)))
    assert "\n" not in str(caught.value) and "model crashed at layer 3" in str(caught.value)


async def test_malformed_data_line_raises_response_error() -> None:
    body = sse(chunk({"content": "Hi"}), '{"choices": [{"delta": {"content": "oops"')
    with pytest.raises(ProviderResponseError):
        await run(provider(lambda request: stream_response(body)))


async def test_stream_ending_without_done_still_completes() -> None:
    body = sse(chunk({"content": "partial answ"}), done=False)
    events = await run(provider(lambda request: stream_response(body)))
    assert events[-1] == Completion(text="partial answ", finish_reason="incomplete")


async def test_comments_event_names_and_crlf_line_endings_are_tolerated() -> None:
    raw = (
        ": keep-alive\r\n\r\n"
        "event: message\r\n"
        f"data: {json.dumps(chunk({'content': 'a'}))}\r\n\r\n"
        ": OPENROUTER PROCESSING\r\n\r\n"
        f"data: {json.dumps(chunk({'content': 'b'}))}\n"
        f"data: {json.dumps(chunk({}, 'stop'))}\n\n"  # two JSON lines in one event
        "data: [DONE]\r\n\r\n"
    ).encode()
    events = await run(provider(lambda request: stream_response(raw)))
    assert texts(events) == "ab"
    assert events[-1] == Completion(text="ab", finish_reason="stop")


async def test_unreachable_server_raises_connection_error_after_retries() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("connection refused")

    sleeps = Sleeps()
    with pytest.raises(ProviderConnectionError, match="connection refused"):
        await run(provider(handler, sleeps, base_url="http://127.0.0.1:9/v1", api_key=""))
    assert len(calls) == 4
    assert sleeps.delays == [1.0, 2.0, 4.0]


def test_context_window_comes_from_the_table_or_config() -> None:
    assert known_context_window("gpt-4o-mini") == 128_000
    assert known_context_window("gpt-4.1-mini") == 1_047_576
    assert known_context_window("o1-mini") == 128_000
    assert known_context_window("o3") == 200_000
    assert known_context_window("qwen2.5:7b") == 32_768
    assert known_context_window("meta-llama/Llama-3.1-8B-Instruct") == 131_072
    assert known_context_window("some-new-model") == 32_768
    assert OpenAIProvider("gpt-4o", context_window=9_000).context_window == 9_000


def test_registry_refuses_openai_without_a_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        make_provider(Config(home=tmp_path), ModelSpec("openai", "gpt-4o-mini"))


def test_registry_allows_a_keyless_compatible_server(tmp_path: Path) -> None:
    config = Config(home=tmp_path, openai_base_url="http://127.0.0.1:8000/v1", max_retries=1)
    model = make_provider(config, ModelSpec("openai", "llama3.1"))
    assert model.name == "openai/llama3.1"
    assert model.context_window == 131_072


def test_registry_builds_ollama_and_scripted_providers(tmp_path: Path) -> None:
    config = Config(home=tmp_path, ollama_host="http://box:11434", context_window=8192)
    ollama = make_provider(config, ModelSpec("ollama", "qwen2.5"))
    assert isinstance(ollama, OpenAIProvider)
    assert ollama.base_url == "http://box:11434/v1"
    assert ollama.context_window == 8192
    assert make_provider(config, ModelSpec("scripted", "")).name == "scripted"


# -- a real OpenAI-compatible server on localhost ---------------------------------------


class _FakeServer(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.received.append((self.path, json.loads(self.rfile.read(length))))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in ("Hello", " from", " localhost"):
            self.wfile.write(sse(chunk({"content": piece}), done=False))
            self.wfile.flush()
        self.wfile.write(sse(chunk({}, "stop")))

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    _FakeServer.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeServer)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


async def test_a_real_local_openai_compatible_server_streams_a_reply(local_server: str) -> None:
    model = OpenAIProvider("llama3.2", base_url=local_server, timeout=10)
    try:
        events = await run(model)
    finally:
        await model.aclose()
    assert texts(events) == "Hello from localhost"
    assert events[-1] == Completion(text="Hello from localhost", finish_reason="stop")
    path, body = _FakeServer.received[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "llama3.2"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("sent", "kept"), [("length", "length"), ("content_filter", "content_filter"), ("eos", "other")]
)
async def test_a_finish_reason_outside_the_known_ones_reads_as_other(sent: str, kept: str) -> None:
    body = sse(chunk({"content": "好的"}), chunk({}, sent))
    events = await run(provider(lambda request: stream_response(body)))
    assert isinstance(events[-1], Completion) and events[-1].finish_reason == kept
