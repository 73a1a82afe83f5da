"""A message read back from outside is checked once, where it enters: every shape Lore
writes reads back unchanged, byte for byte; a malformed one is refused with one line
saying what is wrong, and changes nothing (a store skips that line, as a corrupt one)."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from lore.backends.local.archive import SessionArchive, message_line
from lore.backends.local.live import LiveSession
from lore.channels.terminal import run_once
from lore.clock import FixedClock
from lore.config import Config
from lore.errors import ProviderResponseError, SessionError
from lore.llm.base import ChatRequest
from lore.llm.openai import OpenAIProvider
from lore.llm.retry import RetryPolicy
from lore.messages import Message, finish_reason, parse_message
from lore.runtime import build
from lore.sessions.closing import close_session

# Lines exactly as Lore writes them (one of each kind of message), in three languages.
WRITTEN = [
    b'{"role":"user","content":"\xe6\x88\x91\xe4\xbd\x8f\xe5\x9c\xa8\xe8\x8a\xb1\xe8\x8e\xb2",'
    b'"author":"john","timestamp":"2026-11-30T09:00:00+00:00","channel":"telegram",'
    b'"author_id":"42","message_id":"7"}',
    b'{"role":"assistant","content":"","timestamp":"2026-11-30T09:00:01+00:00",'
    b'"tool_calls":[{"id":"call_1","name":"remember","arguments":"{\\"content\\": \\"x\\"}"}]}',
    b'{"role":"tool","tool_call_id":"call_1","name":"remember","content":"Noted #1",'
    b'"decision":{"trust":"ask","outcome":"approved","by":"john (terminal)"}}',
    b'{"role":"assistant","content":"\xd0\xa5\xd0\xbe\xd1\x80\xd0\xbe\xd1\x88\xd0\xbe",'
    b'"timestamp":"2026-11-30T09:00:02+00:00","why":{"memories":[1]},"interrupted":true}',
    b'{"role":"assistant","content":"\xe2\x8f\xb0 Reminder for @john: call mom",'
    b'"reminder_id":3,"late":false,"timestamp":"2026-11-30T09:05:00+00:00",'
    b'"delivery":"reminder:3:2026-11-30T09:05"}',
    b'{"role":"user","content":[{"type":"text","text":"what is this?"},'
    b'{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}],"cancelled":true}',
    b'{"role":"user","content":"keep my own flag","unanswered":true,"seen":"by anna"}',
]

MALFORMED = {
    b'{"role": "robot", "content": "beep"}': "role 'robot' is not one of system, user",
    b'{"content": "\xe6\xb2\xa1\xe6\x9c\x89\xe8\xa7\x92\xe8\x89\xb2"}': "role null",
    b'{"role": "user", "content": 42}': "content is a number, not text or a list of parts",
    b'{"role": "user", "content": [{"type": "audio"}]}': "content part 0 is not a text or image",
    b'{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", '
    b'"image_url": {"url": "https://x/y.png", "detail": "huge"}}]}': "content part 1 is not",
    '{"role": "user", "content": "привет", "author": 7}'.encode(): "author is a number, not a",
    b'{"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}': (
        "tool call 0 lacks a text id, name or arguments"
    ),
    b'{"role": "user", "content": "x", "cancelled": "yes"}': "cancelled is a string, not true",
    b'{"role": "assistant", "content": "x", "reminder_id": "3"}': "reminder_id is a string",
    b'{"role": "assistant", "content": "x", "why": [1]}': "why is a list, not an object",
    '{"role": "tool", "content": "好", "decision": {"trust": "maybe"}}'.encode(): (
        "decision lacks a known trust level or outcome"
    ),
    b'["user", "hi"]': "not a message: a list, not an object",
}


@pytest.mark.parametrize("raw", WRITTEN)
def test_every_message_lore_writes_reads_back_unchanged(raw: bytes) -> None:
    message = parse_message(json.loads(raw))
    again = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert again == raw


@pytest.mark.parametrize(("raw", "said"), MALFORMED.items())
def test_a_malformed_message_is_refused_in_one_line_saying_why(raw: bytes, said: str) -> None:
    with pytest.raises(SessionError) as caught:
        message_line(raw)
    text = str(caught.value)
    assert said in text and "\n" not in text and len(text) < 120


def test_a_line_that_is_not_json_says_so() -> None:
    with pytest.raises(SessionError, match="not JSON text"):
        message_line(b'{"role": "user", "content": "\xe6\x88\x91')


def test_finish_reasons_outside_the_list_read_as_other() -> None:
    assert finish_reason("length") == "length"
    assert finish_reason("function_call") == "other"


def _live_with_damage(directory: Path) -> tuple[LiveSession, bytes]:
    session = LiveSession(directory, "telegram:42")
    session.append([{"role": "user", "content": "我住在花莲", "author": "john"}])
    with session.path.open("ab") as f:
        f.writelines(raw + b"\n" for raw in MALFORMED)
    session.append([{"role": "assistant", "content": "Хорошо, запомнил."}])
    return session, session.path.read_bytes()


def test_a_live_session_skips_a_malformed_message_naming_why_and_keeps_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, before = _live_with_damage(tmp_path)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = LiveSession(tmp_path, "telegram:42")
    assert [m.get("content") for m in again.messages] == ["我住在花莲", "Хорошо, запомнил."]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == len(MALFORMED)
    assert "role 'robot' is not one of" in warnings[0] and "corrupt line" in warnings[0]
    assert again.path.read_bytes() == before  # read, never rewritten


async def test_a_malformed_message_in_an_archive_is_skipped_naming_why(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    _live_with_damage(config.sessions_dir)
    lore = build(config, clock=FixedClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC)))
    try:
        entry = close_session(lore, "telegram:42")
        assert entry is not None
        archive = lore.sessions.archive
        assert isinstance(archive, SessionArchive)
        path = archive.resolve(entry.transcript_path)
        with path.open("ab") as f:
            f.write(b'{"role": "user", "content": {"text": "\xe8\x8a\xb1\xe8\x8e\xb2"}}\n')
        stored = path.read_bytes()
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            messages, total = archive.read_messages(entry)
    finally:
        await lore.aclose()
    assert [m.get("content") for m in messages] == ["我住在花莲", "Хорошо, запомнил."]
    assert total == 2
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (
        "line 4: skipped an unreadable message line (not a user message: content is an object"
        in (warning)
    )
    assert path.read_bytes() == stored


def test_a_mark_that_would_make_its_message_malformed_is_skipped_naming_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = LiveSession(tmp_path, "line:group:C1")
    session.append([{"role": "user", "content": "明天提醒我买票", "author": "anna"}])
    with session.path.open("ab") as f:
        f.write(b'{"_type":"mark","index":0,"flags":{"cancelled":"\xd0\xb4\xd0\xb0"}}\n')
    session.mark(0, unanswered=True, seen="anna")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = LiveSession(tmp_path, "line:group:C1")
    (message,) = again.messages
    assert "cancelled" not in message  # a cancelled message would leave every window
    assert message.get("unanswered") is True and message.get("content") == "明天提醒我买票"
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "skipped a mark on message 0 (not a user message: cancelled is a string" in warning


def _malformed_provider(reply: bytes) -> OpenAIProvider:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=reply)

    return OpenAIProvider(
        "gpt-4o-mini",
        api_key="sk-test",
        client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        retry=RetryPolicy(rng=lambda: 0.0),
    )


MALFORMED_REPLIES: dict[bytes, str] = {
    b'data: {"choices": ["\xe4\xbd\xa0\xe5\xa5\xbd"]}\n\n': "choices is not a list of objects",
    b'data: {"choices": [{"delta": "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82"}]}\n\n': (
        "delta is not an object"
    ),
    b'data: {"choices": [{"delta": {"tool_calls": [{"function": "f"}]}}]}\n\n': (
        "function is not an object"
    ),
}


@pytest.mark.parametrize(("reply", "said"), MALFORMED_REPLIES.items())
async def test_a_malformed_provider_reply_fails_the_turn_in_one_line_and_stores_nothing_of_it(
    config: Config, reply: bytes, said: str
) -> None:
    provider = _malformed_provider(reply + b"data: [DONE]\n\n")
    lore = build(
        config, provider=provider, clock=FixedClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    )
    try:
        out, err = io.StringIO(), io.StringIO()
        assert await run_once(lore, "cli:default", "我住在花莲", out=out, err=err) == 1
        line = err.getvalue().strip()
        assert f"sent a malformed reply: {said}" in line and "\n" not in line
        assert "Traceback" not in line
        messages: list[Message] = lore.session("cli:default").messages
        assert [(m["role"], m.get("content"), m.get("unanswered")) for m in messages] == [
            ("user", "我住在花莲", True)
        ]
    finally:
        await lore.aclose()


async def test_a_malformed_provider_reply_is_a_provider_response_error() -> None:
    provider = _malformed_provider(b'data: {"choices": [1, 2]}\n\n')
    request_messages: list[Message] = [{"role": "user", "content": "Привет"}]
    stream = provider.stream(ChatRequest(system="", messages=request_messages))
    with pytest.raises(ProviderResponseError, match="malformed reply: choices"):
        async for _ in stream:
            pass
    await provider.aclose()
