"""The exact archive: transcripts written whole, an index that always parses, stable links."""

from __future__ import annotations

import json
from pathlib import Path

from lore.backends.local.archive import SessionArchive
from lore.events import Event
from lore.llm.base import Message
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime
from lore.sessions.closing import close_session
from lore.text import slugify

TOOL_TURN: list[Message] = [
    {"role": "user", "content": "What's the weather in Hualien?", "author": "john"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "name": "weather", "arguments": '{"city": "Hualien"}'}],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "weather", "content": "晴天, 24°C"},
    {"role": "assistant", "content": "Sunny, 24°C."},
]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_archive_holds_every_message_exactly_after_a_metadata_line(lore: Runtime) -> None:
    session = lore.session("cli:default")
    session.append(TOOL_TURN)
    old_id = session.meta.session_id
    entry = close_session(lore, "cli:default")
    assert entry is not None
    lines = _lines(lore.config.home / entry.transcript_path)
    meta, messages = lines[0], lines[1:]
    assert meta["_type"] == "metadata"
    for field in (
        "session_id",
        "key",
        "slug",
        "created_at",
        "updated_at",
        "ended_at",
        "message_count",
        "transcript_path",
        "memory_path",
    ):
        assert field in meta
    assert meta["session_id"] == old_id and meta["key"] == "cli:default"
    assert meta["message_count"] == 4 and meta["transcript_path"] == entry.transcript_path
    assert messages == TOOL_TURN  # tool calls and results included, byte for byte in JSON


def test_archive_is_named_by_local_end_time_slug_and_short_id(lore: Runtime) -> None:
    session = lore.session("cli:default")
    session.append(TOOL_TURN)
    entry = close_session(lore, "cli:default")
    assert entry is not None
    # The fixed clock is 09:00 UTC, 17:00 in Asia/Taipei.
    name = f"2026-11-30-1700-what-s-the-weather-in-hualien--{entry.session_id[:8]}.jsonl"
    assert entry.transcript_path == f"sessions/archive/{name}"


def test_closing_starts_a_fresh_session_with_a_new_id(lore: Runtime) -> None:
    session = lore.session("cli:default")
    session.append(TOOL_TURN)
    old_id = session.meta.session_id
    close_session(lore, "cli:default", session=session)
    assert session.messages == []
    assert session.meta.session_id != old_id
    assert lore.session("cli:default").meta.session_id == session.meta.session_id


def test_index_line_makes_the_session_discoverable(lore: Runtime) -> None:
    lore.session("cli:default").append(TOOL_TURN)
    entry = close_session(lore, "cli:default")
    assert entry is not None
    index = lore.config.sessions_dir / "_sessions.jsonl"
    (line,) = _lines(index)
    assert line["session_id"] == entry.session_id
    assert line["transcript_path"] == entry.transcript_path
    assert line["message_count"] == 4
    assert lore.sessions.archive.get(entry.session_id) == entry


async def test_new_command_archives_and_reports(lore: Runtime, model: ScriptedProvider) -> None:
    events: list[Event] = []
    conversation = lore.conversation("cli:default", emit=events.append)
    model.reply("Hi!")
    await conversation.send("hello")
    old_id = conversation.session.meta.session_id
    output = (await conversation.send("/new")).text
    assert "New session started" in output and "sessions/archive/" in output
    assert conversation.session.meta.session_id != old_id
    assert conversation.session.messages == []
    (entry,) = lore.sessions.archive.entries()
    assert entry.session_id == old_id and entry.message_count == 2


async def test_new_on_an_empty_session_archives_nothing(lore: Runtime) -> None:
    conversation = lore.conversation("cli:default", emit=lambda e: None)
    assert (await conversation.send("/new")).text == "New session started."
    assert lore.sessions.archive.entries() == []


def test_a_torn_index_line_is_skipped_then_cut_by_the_next_append(lore: Runtime) -> None:
    lore.session("cli:default").append(TOOL_TURN)
    first = close_session(lore, "cli:default")
    index = lore.config.sessions_dir / "_sessions.jsonl"
    with index.open("ab") as f:
        f.write(b'{"_type":"session","session_id":"dead')  # a crash mid-append
    archive = lore.sessions.archive
    assert [e.session_id for e in archive.entries()] == [first.session_id if first else ""]
    lore.session("cli:default").append(TOOL_TURN)
    second = close_session(lore, "cli:default")
    assert second is not None
    assert [line["session_id"] for line in _lines(index)] == [
        first.session_id if first else "",
        second.session_id,
    ]


def test_link_summary_points_index_and_metadata_at_the_summary(lore: Runtime) -> None:
    lore.session("cli:default").append(TOOL_TURN)
    entry = close_session(lore, "cli:default")
    assert entry is not None
    archive = lore.sessions.archive
    archive.link_summary(
        entry.session_id, "workspace/memory/2026-11-30-1700-weather.md", "weather", "written"
    )
    linked = archive.get(entry.session_id)
    assert linked is not None
    assert linked.memory_path == "workspace/memory/2026-11-30-1700-weather.md"
    assert linked.slug == "weather" and linked.summary == "written"
    meta = _lines(lore.config.home / entry.transcript_path)[0]
    assert meta["memory_path"] == "workspace/memory/2026-11-30-1700-weather.md"
    # The transcript itself is untouched and its path never changes.
    assert linked.transcript_path == entry.transcript_path
    assert _lines(lore.config.home / entry.transcript_path)[1:] == TOOL_TURN


def test_reading_an_archived_transcript_in_pages(lore: Runtime) -> None:
    session = lore.session("cli:default")
    session.append([{"role": "user", "content": f"message {i}"} for i in range(25)])
    entry = close_session(lore, "cli:default")
    assert entry is not None
    page, total = lore.sessions.archive.read_messages(entry, offset=10, limit=5)
    assert total == 25
    assert [m["content"] for m in page] == [f"message {i}" for i in range(10, 15)]


def test_slugs_are_safe_ascii_kebab_file_names() -> None:
    assert slugify("Trip to Hualien!") == "trip-to-hualien"
    assert slugify("Café crème, s'il vous plaît") == "cafe-creme-s-il-vous-plait"
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert slugify("我们去花莲旅行") == "session"
    assert slugify("Поездка в Казань") == "session"
    assert slugify("") == "session"
    assert len(slugify("word " * 50)) <= 48


def test_chinese_and_russian_conversations_archive_intact(lore: Runtime) -> None:
    chat: list[Message] = [
        {"role": "user", "content": "我下周去花莲"},
        {"role": "assistant", "content": "好的，祝旅途愉快"},
        {"role": "user", "content": "Напомни купить билеты"},
    ]
    lore.session("line:group:C1").append(chat)
    entry = close_session(lore, "line:group:C1")
    assert entry is not None
    assert entry.slug == "session"
    path = lore.config.home / entry.transcript_path
    assert path.name.isascii()
    assert _lines(path)[1:] == chat


def test_archive_paths_are_relative_to_home(tmp_path: Path) -> None:
    archive = SessionArchive(tmp_path / "sessions", tmp_path)
    stored = archive.relative(tmp_path / "sessions" / "archive" / "x.jsonl")
    assert stored == "sessions/archive/x.jsonl"
    assert archive.resolve(stored) == tmp_path / "sessions" / "archive" / "x.jsonl"
