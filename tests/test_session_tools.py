"""session_list and session_history: find and page archived sessions, within one scope only."""

from __future__ import annotations

from datetime import UTC, datetime

from lore.core.tools import ToolContext
from lore.llm.base import ToolCall
from lore.llm.scripted import ScriptedProvider
from lore.messages import Message
from lore.ports.sessions import ArchivedSession
from lore.runtime import Runtime
from lore.sessions.closing import close_session
from lore.sessions.tools import MAX_PAGE, MESSAGE_CHARS, PAGE_CHARS
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

KEY = "cli:default"


def _ctx(scope: str = KEY) -> ToolContext:
    return ToolContext(
        scope=scope,
        author="john",
        session_id="live",
        message_index=0,
        now=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        timezone="Asia/Taipei",
    )


async def _call(lore: Runtime, name: str, scope: str = KEY, **args: object) -> tuple[str, bool]:
    import json

    result = await lore.tools.call(ToolCall("c1", name, json.dumps(args)), _ctx(scope))
    return result.content, result.is_error


def _archive(lore: Runtime, key: str, messages: list[Message]) -> ArchivedSession:
    lore.session(key).append(messages)
    entry = close_session(lore, key)
    assert entry is not None
    return entry


def _chat(n: int, word: str = "hualien") -> list[Message]:
    return [{"role": "user", "content": f"{word} message {i}"} for i in range(n)]


async def test_session_list_shows_this_conversations_archived_sessions(lore: Runtime) -> None:
    first = _archive(lore, KEY, _chat(3))
    second = _archive(lore, KEY, _chat(2, "taipei"))
    _archive(lore, "line:group:C1", _chat(2, "family"))
    text, error = await _call(lore, "session_list")
    assert not error
    assert first.session_id in text and second.session_id in text
    assert text.index(second.session_id) < text.index(first.session_id)  # newest first
    assert first.transcript_path in text and "3 messages" in text
    assert "family" not in text and "line:group:C1" not in text


async def test_session_list_filters_by_id_slug_and_paths(lore: Runtime) -> None:
    first = _archive(lore, KEY, _chat(3))
    second = _archive(lore, KEY, _chat(2, "taipei"))
    lore.sessions.archive.link_summary(
        second.session_id,
        "workspace/memory/2026-11-30-1700-taipei-trip.md",
        "taipei-trip",
        "written",
    )
    by_id, _ = await _call(lore, "session_list", session_id=first.session_id[:8])
    assert first.session_id in by_id and second.session_id not in by_id
    by_slug, _ = await _call(lore, "session_list", slug="TAIPEI")
    assert second.session_id in by_slug and first.session_id not in by_slug
    by_memory, _ = await _call(lore, "session_list", memory_path="taipei-trip.md")
    assert second.session_id in by_memory and first.session_id not in by_memory
    by_transcript, _ = await _call(lore, "session_list", transcript_path=first.session_id[:8])
    assert first.session_id in by_transcript and second.session_id not in by_transcript
    by_key, error = await _call(lore, "session_list", key=KEY)
    assert not error and first.session_id in by_key


async def test_another_scopes_session_is_a_clear_error_and_shows_nothing(lore: Runtime) -> None:
    theirs = _archive(lore, "line:group:C1", _chat(2, "family"))
    for name, args in [
        ("session_list", {"session_id": theirs.session_id}),
        ("session_history", {"session_id": theirs.session_id}),
        ("session_list", {"key": "line:group:C1"}),
        ("session_history", {"session_key": "line:group:C1"}),
    ]:
        text, error = await _call(lore, name, **args)
        assert error, (name, args)
        assert "family" not in text and theirs.transcript_path not in text
    text, _ = await _call(lore, "session_history", session_id=theirs.session_id)
    assert "no archived session" in text and "in this conversation" in text


async def test_session_history_pages_an_archived_session_exactly(lore: Runtime) -> None:
    messages: list[Message] = [
        {"role": "user", "content": "天气如何？", "author": "john"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "weather", "arguments": '{"city": "花莲"}'}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": "晴天 24°C"},
        {"role": "assistant", "content": "花莲晴天。"},
        *_chat(60),
    ]
    entry = _archive(lore, KEY, messages)
    first, error = await _call(lore, "session_history", session_id=entry.session_id)
    assert not error
    assert "messages 0–19 of 64" in first
    assert "[0] user (john): 天气如何？" in first
    assert '→ weather({"city": "花莲"})' in first
    assert "[2] tool weather: 晴天 24°C" in first
    assert "[3] assistant: 花莲晴天。" in first
    assert f'next page: session_history(session_id="{entry.session_id}", offset=20)' in first
    second, _ = await _call(lore, "session_history", session_id=entry.session_id, offset=20)
    assert "messages 20–39 of 64" in second and "[20] user: hualien message 16" in second
    last, _ = await _call(lore, "session_history", session_id=entry.session_id[:8], offset=-4)
    assert "messages 60–63 of 64" in last and "next page" not in last


async def test_a_page_never_floods_the_context(lore: Runtime) -> None:
    entry = _archive(lore, KEY, [{"role": "user", "content": "x" * 50_000}] * 30)
    text, _ = await _call(lore, "session_history", session_id=entry.session_id, limit=500)
    assert len(text) < PAGE_CHARS + MESSAGE_CHARS + 1000
    assert f"[{50_000 - MESSAGE_CHARS} more characters]" in text
    assert "next page" in text
    assert MAX_PAGE <= 50


async def test_session_history_without_an_id_reads_the_live_session(lore: Runtime) -> None:
    lore.session(KEY).append(_chat(3, "live"))
    text, error = await _call(lore, "session_history")
    assert not error and "Live session" in text and "[2] user: live message 2" in text
    same, _ = await _call(lore, "session_history", session_key=KEY)
    assert same == text


async def test_the_model_finds_and_reads_a_past_session(
    lore: Runtime, model: ScriptedProvider
) -> None:
    entry = _archive(lore, KEY, _chat(2))
    model.tool_call("session_list", {"slug": "hualien"})
    model.tool_call("session_history", {"session_id": entry.session_id})
    model.reply("You said: hualien message 0.")
    await lore.conversation(KEY, emit=lambda e: None).send("What did I say last time?")
    listed = model.requests[1].messages[-1]["content"]
    assert entry.session_id in listed
    history = model.requests[2].messages[-1]["content"]
    assert "[0] user: hualien message 0" in history
    assert {"session_list", "session_history"} <= {t.name for t in model.requests[0].tools}
