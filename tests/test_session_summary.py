"""A closed session's summary (slug, summary, key messages), linked both ways; or a digest."""

from __future__ import annotations

import json
from dataclasses import replace

from lore.backends.local.history import History
from lore.bus import Conversation
from lore.config import SessionMemoryConfig
from lore.errors import ProviderServerError
from lore.files import try_lock
from lore.llm.scripted import ScriptedProvider
from lore.memory.session_summary import (
    SUMMARY_PROMPT,
    read_summary_section,
    schedule_summary,
    write_session_summary,
)
from lore.runtime import Runtime
from lore.search import searcher
from lore.sessions.closing import close_if_idle, close_session

KEY = "cli:default"


def _summary(slug: str = "hualien-trip", summary: str = "John plans a trip to Hualien.") -> str:
    return json.dumps(
        {"slug": slug, "summary": summary, "key_messages": ["I go to Hualien on Friday"]},
        ensure_ascii=False,
    )


async def _chat(lore: Runtime, model: ScriptedProvider, *said: str) -> Conversation:
    conversation = lore.conversation(KEY, emit=lambda e: None)
    for text in said:
        model.reply(f"ok: {text}")
        await conversation.send(text)
    return conversation


async def _close(lore: Runtime, conversation: Conversation) -> None:
    await conversation.send("/new")
    await lore.background.drain()


async def test_the_summary_links_to_transcript_and_index_and_they_link_back(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "I go to Hualien on Friday", "Book the train")
    model.reply(_summary())
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.memory_path == "workspace/memory/2026-11-30-1700-hualien-trip.md"
    assert entry.slug == "hualien-trip" and entry.summary == "written"
    text = (lore.config.home / entry.memory_path).read_text(encoding="utf-8")
    assert text.splitlines()[:7] == [
        "# hualien-trip",
        "",
        f"- Session ID: {entry.session_id}",
        f"- Session Key: {KEY}",
        f"- Ended At: {entry.ended_at}",
        f"- Transcript: {entry.transcript_path}",
        "- Session Index: sessions/_sessions.jsonl",
    ]
    assert "## Summary\n\nJohn plans a trip to Hualien.\n" in text
    assert "## Key messages\n\n- I go to Hualien on Friday\n" in text
    meta = json.loads((lore.config.home / entry.transcript_path).read_text().splitlines()[0])
    assert meta["memory_path"] == entry.memory_path
    request = model.requests[-1]
    assert request.system == SUMMARY_PROMPT and request.json_mode
    assert "Book the train" in request.messages[0]["content"]


async def test_headings_in_the_summary_never_cut_it_short_or_change_its_scope(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "我周五去花莲", "帮我订火车票")
    model.reply(_summary(summary="## 计划 · 10:30\n周五去花莲\n## 待办\n订火车票"))
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.memory_path is not None
    path = lore.config.home / entry.memory_path
    summary = read_summary_section(path)
    assert summary is not None and "周五去花莲" in summary and "订火车票" in summary
    relative = path.relative_to(lore.workspace.root).as_posix()
    assert {note.scope for note in lore.notes.notes(relative)} == {KEY}
    hits = searcher(lore).search("花莲", "cli:other", mode="text")
    assert hits == [], [(h.entry.scope, h.entry.source, h.entry.text) for h in hits]


async def test_the_summary_reaches_history_for_dream(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "one", "two")
    model.reply(_summary())
    await _close(lore, conversation)
    (entry,) = History(lore.workspace.memory_dir).entries()
    assert entry.session_key == KEY
    assert "hualien-trip" in entry.content and "John plans a trip" in entry.content


async def test_a_chinese_conversation_gets_an_ascii_file_name(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "我下周五去花莲", "帮我记得订火车票")
    model.reply(_summary("hualien-trip", "小明下周五去花莲，需要订火车票。"))
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.memory_path is not None and entry.memory_path.isascii()
    text = (lore.config.home / entry.memory_path).read_text(encoding="utf-8")
    assert "小明下周五去花莲，需要订火车票。" in text


async def test_an_unsafe_or_non_ascii_slug_is_made_safe(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "Поездка", "в Казань")
    model.reply(_summary("Поездка в Казань", "Поездка в Казань."))
    await _close(lore, conversation)
    conversation = await _chat(lore, model, "x", "y")
    model.reply(_summary("../../etc/passwd", "Nothing."))
    await _close(lore, conversation)
    paths = sorted(e.memory_path or "" for e in lore.sessions.archive.entries())
    assert paths == [
        "workspace/memory/2026-11-30-1700-etc-passwd.md",
        "workspace/memory/2026-11-30-1700-session.md",
    ]


async def test_a_failing_model_yields_the_raw_digest(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "I go to Hualien on Friday", "Book the train")
    model.fail(ProviderServerError("down", status=503))
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.memory_path == "workspace/memory/2026-11-30-1700-session-raw.md"
    assert entry.summary == "raw"
    text = (lore.config.home / entry.memory_path).read_text(encoding="utf-8")
    assert f"- Session ID: {entry.session_id}" in text
    assert f"- Transcript: {entry.transcript_path}" in text
    assert "I go to Hualien on Friday" in text and "ok: Book the train" in text
    (history,) = History(lore.workspace.memory_dir).entries()
    assert history.content.startswith("[RAW]")


async def test_an_unusable_answer_yields_the_raw_digest(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "one", "two")
    model.reply("Sure! Here is a summary: we talked.")
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.summary == "raw" and entry.memory_path is not None
    assert entry.memory_path.endswith("-session-raw.md")


async def test_a_trivial_session_gets_no_summary(lore: Runtime, model: ScriptedProvider) -> None:
    conversation = await _chat(lore, model, "hi")
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.summary == "skipped" and entry.memory_path is None
    assert len(model.requests) == 1  # only the chat turn
    assert History(lore.workspace.memory_dir).entries() == []


async def test_summaries_can_be_turned_off(lore: Runtime, model: ScriptedProvider) -> None:
    lore.config = replace(lore.config, session_memory=SessionMemoryConfig(enabled=False))
    conversation = await _chat(lore, model, "one", "two")
    await _close(lore, conversation)
    (entry,) = lore.sessions.archive.entries()
    assert entry.summary == "skipped"


async def test_two_sessions_closed_in_one_minute_never_overwrite(
    lore: Runtime, model: ScriptedProvider
) -> None:
    for key in ("cli:default", "cli:work"):
        session = lore.session(key)
        session.append([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
        entry = close_session(lore, key)
        assert entry is not None
        model.reply(_summary())
        await write_session_summary(lore, entry)
    paths = sorted(e.memory_path or "" for e in lore.sessions.archive.entries())
    assert paths == [
        "workspace/memory/2026-11-30-1700-hualien-trip-2.md",
        "workspace/memory/2026-11-30-1700-hualien-trip.md",
    ]


async def test_a_summary_a_kill_interrupted_is_written_at_the_next_start(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = await _chat(lore, model, "I go to Hualien on Friday", "Book the train")
    close_session(lore, KEY)  # archived and indexed; the process died before the summary
    model.reply(_summary())
    await close_if_idle(lore, KEY)  # what every chat start runs
    await lore.background.drain()
    (entry,) = lore.sessions.archive.entries()
    assert entry.summary == "written" and entry.memory_path is not None
    await close_if_idle(lore, KEY)  # the next start finds nothing left to do
    await lore.background.drain()
    assert len(model.requests) == 3  # two turns, one summary
    assert conversation.session.messages == []


async def test_a_summary_is_written_once_however_often_it_is_asked_for(
    lore: Runtime, model: ScriptedProvider
) -> None:
    await _chat(lore, model, "one", "two")
    entry = close_session(lore, KEY)
    assert entry is not None
    with try_lock(lore.config.sessions_dir / "_summaries.lock"):
        # Another process is writing it: this one leaves it alone.
        assert (await write_session_summary(lore, entry)).summary == "pending"
    model.reply(_summary())
    schedule_summary(lore, entry)
    schedule_summary(lore, entry)
    await lore.background.drain()
    assert (await write_session_summary(lore, entry)).summary == "written"
    assert len(model.requests) == 3
    assert len(History(lore.workspace.memory_dir).entries()) == 1


async def test_a_session_closed_again_with_more_messages_gets_a_new_summary(
    lore: Runtime, model: ScriptedProvider
) -> None:
    def crash_before_reset(step: str) -> None:
        if step == "index_written":
            raise RuntimeError(step)

    await _chat(lore, model, "I go to Hualien on Friday", "Book the train")
    session = lore.session(KEY)
    try:
        close_session(lore, KEY, fault=crash_before_reset)
    except RuntimeError:
        pass
    (first,) = lore.sessions.archive.entries()
    model.reply(_summary())
    assert (await write_session_summary(lore, first)).summary == "written"
    session.append([{"role": "user", "content": "And a hotel in Taitung"}])
    again = close_session(lore, KEY)
    assert again is not None
    (pending,) = lore.sessions.archive.entries()
    assert pending.summary == "pending" and pending.memory_path is not None  # the old one
    model.reply(_summary("hualien-and-taitung", "Trains to Hualien, a hotel in Taitung."))
    done = await write_session_summary(lore, again)
    assert done.summary == "written" and done.memory_path is not None
    assert "Taitung" in (lore.config.home / done.memory_path).read_text(encoding="utf-8")
