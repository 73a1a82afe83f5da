"""What every SessionStore does: live sessions (append, append_once, marks, metadata,
reset, lock), the archive and its index, close and recover, and presence."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from lore.errors import SessionError
from lore.llm.base import Message
from lore.ports.sessions import CLOSE_STEPS, ArchivedSession, FaultHook, SessionStore
from tests.contract.conftest import Backend

KEY = "cli:default"
GROUP = "line:group:C1"
ENDED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TAIPEI = ZoneInfo("Asia/Taipei")
MESSAGES: list[Message] = [
    {"role": "user", "content": "我住在花莲", "author": "john"},
    {"role": "assistant", "content": "好的"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "remember", "arguments": '{"content": "花莲"}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "remember", "content": "Remembered as #1."},
    {"role": "user", "content": "Запомни: билеты в пятницу", "author": "john"},
    {"role": "assistant", "content": "Запомнил."},
]


class Crash(Exception):
    """Stands in for the process dying at a step."""


@pytest.fixture
def sessions(backend: Backend) -> SessionStore:
    return backend.sessions


def close(
    sessions: SessionStore, key: str = KEY, reason: str = "new", fault: FaultHook | None = None
) -> ArchivedSession | None:
    return sessions.close(
        sessions.live(key), reason=reason, ended_at=ENDED, zone=TAIPEI, slug="trip", fault=fault
    )


def crash_at(step: str) -> FaultHook:
    def fault(name: str) -> None:
        if name == step:
            raise Crash(step)

    return fault


# -- live sessions --------------------------------------------------------------------


def test_a_new_live_session_is_empty_with_metadata_for_its_key(sessions: SessionStore) -> None:
    assert sessions.live_meta(KEY) is None
    session = sessions.live(KEY)
    assert (session.key, session.messages) == (KEY, [])
    assert (session.meta.key, session.meta.last_consolidated, session.meta.extra) == (KEY, 0, {})
    assert session.meta.session_id and session.meta.created_at
    meta = sessions.live_meta(KEY)
    assert meta is not None and meta.session_id == session.meta.session_id
    assert sessions.live_keys() == [KEY]


def test_appended_messages_are_read_back_exactly_by_every_handle(backend: Backend) -> None:
    writer = backend.sessions.live(KEY)
    reader = backend.reopen().sessions.live(KEY)  # another process's handle
    writer.append(MESSAGES[:2])
    writer.append(MESSAGES[2:])
    assert writer.messages == MESSAGES
    assert reader.messages == []  # until it refreshes
    reader.refresh()
    assert reader.messages == MESSAGES
    assert backend.reopen().sessions.live(KEY).messages == MESSAGES


def test_live_gives_a_handle_current_as_of_the_call(backend: Backend) -> None:
    held = backend.sessions.live(KEY)
    backend.reopen().sessions.live(KEY).append(MESSAGES[:1])
    again = backend.sessions.live(KEY)  # the same handle refreshed, or a new one
    assert again.messages == MESSAGES[:1]
    assert again is held or held.messages == []


def test_keys_are_separate_conversations(sessions: SessionStore) -> None:
    sessions.live(KEY).append(MESSAGES[:1])
    sessions.live(GROUP).append([{"role": "user", "content": "群里的消息"}])
    assert sessions.live(KEY).messages == MESSAGES[:1]
    assert [m["content"] for m in sessions.live(GROUP).messages] == ["群里的消息"]
    assert sorted(sessions.live_keys()) == sorted([KEY, GROUP])
    meta = sessions.live_meta(GROUP)
    assert meta is not None and meta.session_id != sessions.live(KEY).meta.session_id


def test_any_key_names_its_own_session(sessions: SessionStore) -> None:
    keys = ["line:group:家人", "telegram:чат/1", "a:b", "a_b", "../x"]
    for n, key in enumerate(keys):
        sessions.live(key).append([{"role": "user", "content": f"message {n}"}])
    assert sorted(sessions.live_keys()) == sorted(keys)
    for n, key in enumerate(keys):
        assert sessions.live(key).messages == [{"role": "user", "content": f"message {n}"}]


def test_a_caller_changing_what_it_appended_changes_nothing_stored(backend: Backend) -> None:
    message: Message = {"role": "user", "content": "original"}
    backend.sessions.live(KEY).append([message])
    message["content"] = "changed"
    assert backend.sessions.live(KEY).messages == [{"role": "user", "content": "original"}]
    assert backend.reopen().sessions.live(KEY).messages == [message | {"content": "original"}]


def test_append_bumps_updated_at_unless_told_not_to(sessions: SessionStore) -> None:
    session = sessions.live(KEY)
    session.update_meta(updated_at="2000-01-01T00:00:00+00:00")
    session.append(MESSAGES[:1], touch=False)
    assert sessions.live(KEY).meta.updated_at == "2000-01-01T00:00:00+00:00"
    session.append(MESSAGES[1:2])
    assert sessions.live(KEY).meta.updated_at > "2000-01-01T00:00:00+00:00"


def test_append_once_appends_a_delivery_key_only_once(backend: Backend) -> None:
    sessions = backend.sessions
    first, second = sessions.live(KEY), backend.reopen().sessions.live(KEY)
    reminder: Message = {"role": "assistant", "content": "⏰ 喝水", "reminder_id": 7}
    assert first.append_once("reminder:7:100", [reminder])
    assert not second.append_once("reminder:7:100", [reminder])  # sees the other's write
    assert second.append_once("reminder:7:200", [reminder])
    stored = sessions.live(KEY).messages
    assert [m["delivery"] for m in stored] == ["reminder:7:100", "reminder:7:200"]
    assert stored[0] == {**reminder, "delivery": "reminder:7:100"}


def test_a_mark_sets_flags_on_one_message_for_every_reader(backend: Backend) -> None:
    session = backend.sessions.live(KEY)
    session.append(MESSAGES[:2])
    session.mark(0, cancelled=True)
    session.mark(1, unanswered=True, reason="остановлено")
    session.mark(99, cancelled=True)  # no such message: ignored
    for reader in (session, backend.reopen().sessions.live(KEY)):
        assert reader.messages[0] == {**MESSAGES[0], "cancelled": True}
        assert reader.messages[1] == {**MESSAGES[1], "unanswered": True, "reason": "остановлено"}
        assert len(reader.messages) == 2


def test_update_meta_sets_fields_and_merges_extra(sessions: SessionStore) -> None:
    session = sessions.live(KEY)
    session.update_meta(last_consolidated=3, extra={"summary": "旅行计划"})
    session.update_meta(extra={"previous": "x" * 3000})
    again = sessions.live(KEY)
    assert again.meta.last_consolidated == 3
    assert again.meta.extra == {"summary": "旅行计划", "previous": "x" * 3000}
    meta = sessions.live_meta(KEY)
    assert meta is not None and meta.last_consolidated == 3


def test_reset_starts_a_fresh_transcript_under_the_same_key(sessions: SessionStore) -> None:
    session = sessions.live(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    session.reset()
    assert session.messages == [] and session.meta.session_id != old_id
    other = sessions.live(KEY)
    assert other.messages == [] and other.meta.session_id == session.meta.session_id
    session.reset("chosen-id")
    assert sessions.live(KEY).meta.session_id == "chosen-id"


def test_a_handle_sees_a_reset_done_through_another(backend: Backend) -> None:
    stale = backend.sessions.live(KEY)
    stale.append(MESSAGES)
    backend.reopen().sessions.live(KEY).reset()
    stale.refresh()
    assert stale.messages == []
    stale.append(MESSAGES[:1])
    assert backend.reopen().sessions.live(KEY).messages == MESSAGES[:1]


def test_the_lock_is_reentrant_and_writes_inside_it_land(sessions: SessionStore) -> None:
    session = sessions.live(KEY)
    with session.locked(), session.locked():
        session.append(MESSAGES[:1])
        assert session.append_once("k", MESSAGES[1:2])
    assert len(sessions.live(KEY).messages) == 2


def test_a_draft_holds_what_was_streamed_and_leaves_nothing_behind(sessions: SessionStore) -> None:
    session = sessions.live(KEY)
    session.append(MESSAGES[:1])
    with session.draft(0) as draft:
        draft.write("好的，")
        draft.write("明白了")
        assert draft.text == "好的，明白了"
    assert sessions.live(KEY).messages == MESSAGES[:1]


# -- closing and the archive ------------------------------------------------------------


def test_close_archives_the_exact_transcript_indexes_it_and_starts_fresh(
    sessions: SessionStore,
) -> None:
    session = sessions.live(KEY)
    session.append(MESSAGES)
    old = session.meta
    entry = close(sessions)
    assert entry is not None
    assert (entry.session_id, entry.key, entry.slug, entry.reason) == (
        old.session_id,
        KEY,
        "trip",
        "new",
    )
    assert (entry.message_count, entry.summary, entry.memory_path) == (6, "pending", None)
    assert (entry.created_at, entry.ended_at) == (old.created_at, "2026-11-30T09:00:00+00:00")
    assert sessions.archive.read_messages(entry) == (MESSAGES, 6)
    assert sessions.archive.entries() == [entry]
    assert sessions.archive.get(entry.session_id) == entry
    assert sessions.archive.get("no-such-session") is None
    fresh = sessions.live(KEY)
    assert fresh.messages == [] and fresh.meta.session_id != old.session_id
    assert "previous_session_id" not in fresh.meta.extra


def test_an_idle_close_tells_the_fresh_session_where_the_past_is(sessions: SessionStore) -> None:
    sessions.live(KEY).append(MESSAGES)
    entry = close(sessions, reason="idle")
    assert entry is not None and entry.reason == "idle"
    assert sessions.live(KEY).meta.extra == {
        "previous_session_id": entry.session_id,
        "previous_transcript": entry.transcript_path,
    }


def test_closing_an_empty_session_archives_nothing(sessions: SessionStore) -> None:
    session = sessions.live(KEY)
    old_id = session.meta.session_id
    assert close(sessions, reason="idle") is None
    assert sessions.live(KEY).meta.session_id == old_id  # idle: left as it is
    assert close(sessions) is None
    assert sessions.live(KEY).meta.session_id != old_id  # /new: a fresh id all the same
    assert sessions.archive.entries() == []


def test_the_archive_keeps_every_closed_session_in_close_order(sessions: SessionStore) -> None:
    sessions.live(KEY).append(MESSAGES[:2])
    first = close(sessions)
    sessions.live(GROUP).append([{"role": "user", "content": "Поездка в Казань"}])
    second = close(sessions, GROUP)
    sessions.live(KEY).append(MESSAGES[2:])
    third = close(sessions)
    assert first and second and third
    assert [e.session_id for e in sessions.archive.entries()] == [
        first.session_id,
        second.session_id,
        third.session_id,
    ]
    assert sessions.archive.read_messages(third) == (MESSAGES[2:], 4)
    assert len({first.transcript_path, second.transcript_path, third.transcript_path}) == 3


def test_archived_messages_are_read_in_pages(sessions: SessionStore) -> None:
    sessions.live(KEY).append([{"role": "user", "content": f"сообщение {i}"} for i in range(25)])
    entry = close(sessions)
    assert entry is not None
    page, total = sessions.archive.read_messages(entry, offset=10, limit=5)
    assert total == 25
    assert [m["content"] for m in page] == [f"сообщение {i}" for i in range(10, 15)]
    assert sessions.archive.read_messages(entry, offset=24)[0][0]["content"] == "сообщение 24"


def test_link_summary_points_the_entry_at_its_summary_and_keeps_its_transcript(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES)
    entry = close(sessions)
    assert entry is not None
    before = sessions.archive.stamp()
    sessions.archive.link_summary(
        entry.session_id, "workspace/memory/trip.md", "hualien", "written"
    )
    linked = sessions.archive.get(entry.session_id)
    assert linked is not None
    assert (linked.memory_path, linked.slug, linked.summary) == (
        "workspace/memory/trip.md",
        "hualien",
        "written",
    )
    assert linked.transcript_path == entry.transcript_path
    assert sessions.archive.read_messages(linked) == (MESSAGES, 6)
    assert sessions.archive.stamp() != before
    with pytest.raises(SessionError):
        sessions.archive.link_summary("no-such-session", None, "x", "skipped")


def test_an_entrys_fingerprint_changes_whenever_its_transcript_is_written_again(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES[:2])
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("index_written"))
    entry = sessions.live(KEY).meta.session_id
    first = sessions.archive.get(entry)
    assert first is not None
    closed = sessions.archive.fingerprint(first)
    assert closed is not None and sessions.archive.fingerprint(first) == closed
    sessions.archive.link_summary(entry, "workspace/memory/trip.md", "trip", "written")
    linked = sessions.archive.fingerprint(first)
    assert linked not in (None, closed)
    sessions.live(KEY).append(MESSAGES[2:])
    again = close(sessions)
    assert again is not None
    assert sessions.archive.fingerprint(again) not in (None, closed, linked)


def test_the_stamp_changes_whenever_a_session_is_archived(sessions: SessionStore) -> None:
    start = sessions.archive.stamp()
    sessions.live(KEY).append(MESSAGES)
    close(sessions)
    after_one = sessions.archive.stamp()
    sessions.live(KEY).append(MESSAGES)
    close(sessions)
    assert len({start, after_one, sessions.archive.stamp()}) == 3


@pytest.mark.parametrize("step", CLOSE_STEPS)
def test_a_close_stopped_at_any_step_loses_nothing_and_recover_heals_it(
    sessions: SessionStore, step: str
) -> None:
    session = sessions.live(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at(step))
    live = sessions.live(KEY).messages
    archived = [m for e in sessions.archive.entries() for m in sessions.archive.read_messages(e)[0]]
    assert all(m in live or m in archived for m in MESSAGES)
    sessions.recover(min_age=0)
    if sessions.live(KEY).meta.session_id == old_id:
        close(sessions)  # the crash came before anything was durable: close again
    (entry,) = sessions.archive.entries()
    assert entry.session_id == old_id
    assert sessions.archive.read_messages(entry) == (MESSAGES, 6)
    fresh = sessions.live(KEY)
    assert fresh.messages == [] and fresh.meta.session_id != old_id


def test_recover_finishes_a_close_stopped_after_indexing_and_reports_its_summary_due(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES)
    old_id = sessions.live(KEY).meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("index_written"))
    assert sessions.live(KEY).meta.session_id == old_id  # not cleared yet
    pending = sessions.recover(min_age=0)
    assert [entry.session_id for entry in pending] == [old_id]
    assert sessions.live(KEY).messages == []


def test_recover_reports_closed_sessions_whose_summary_is_still_pending(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES)
    summarised = close(sessions)
    sessions.live(KEY).append(MESSAGES[:2])
    waiting = close(sessions)
    assert summarised and waiting
    sessions.archive.link_summary(summarised.session_id, "m.md", "trip", "written")
    assert [e.session_id for e in sessions.recover(min_age=0)] == [waiting.session_id]


def test_messages_added_after_a_stopped_close_are_archived_by_the_next(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES)
    old_id = sessions.live(KEY).meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("archive_written"))
    later: Message = {"role": "user", "content": "ещё одно"}
    sessions.live(KEY).append([later])
    sessions.recover(min_age=0)  # the archive belongs to the live session: kept for it
    entry = close(sessions)
    assert entry is not None and entry.session_id == old_id
    assert sessions.archive.read_messages(entry) == ([*MESSAGES, later], 7)
    assert [e.session_id for e in sessions.archive.entries()] == [old_id]


def test_an_archive_whose_live_session_moved_on_is_indexed_by_recover(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES)
    old_id = sessions.live(KEY).meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("archive_written"))
    sessions.live(KEY).reset()  # the archive is now the only copy
    sessions.recover(min_age=0)
    (entry,) = sessions.archive.entries()
    assert entry.session_id == old_id
    assert sessions.archive.read_messages(entry)[0] == MESSAGES


def test_a_reclosed_session_keeps_its_transcript_path_and_earlier_summary(
    sessions: SessionStore,
) -> None:
    session = sessions.live(KEY)
    session.append(MESSAGES[:2])
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("index_written"))
    first = sessions.archive.get(old_id)
    assert first is not None
    sessions.archive.link_summary(old_id, "workspace/memory/first.md", "trip", "written")
    sessions.live(KEY).append(MESSAGES[2:])
    again = close(sessions)
    assert again is not None and again.session_id == old_id
    assert again.transcript_path == first.transcript_path
    (entry,) = sessions.archive.entries()
    assert (entry.message_count, entry.summary) == (6, "pending")
    assert entry.memory_path == "workspace/memory/first.md"
    assert sessions.archive.read_messages(entry) == (MESSAGES, 6)


def _every_message(sessions: SessionStore) -> list[Message]:
    """Every message of the live session and the indexed archives, in that order."""
    found = [m for e in sessions.archive.entries() for m in sessions.archive.read_messages(e)[0]]
    return found + sessions.live(KEY).messages


def test_a_reclose_stopped_after_rewriting_its_transcript_is_finished_by_recover_once(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES[:2])
    old_id = sessions.live(KEY).meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("index_written"))  # indexed, never cleared
    sessions.live(KEY).append(MESSAGES[2:])
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("archive_written"))  # rewritten, not indexed again
    for _ in range(2):  # a second pass finds nothing left to do
        sessions.recover(min_age=0)
        (entry,) = sessions.archive.entries()
        assert (entry.session_id, entry.message_count, entry.summary) == (old_id, 6, "pending")
        assert sessions.archive.read_messages(entry) == (MESSAGES, 6)
        fresh = sessions.live(KEY)
        assert fresh.messages == [] and fresh.meta.session_id != old_id


def test_messages_added_after_a_close_stopped_once_indexed_stay_live_and_only_there(
    sessions: SessionStore,
) -> None:
    sessions.live(KEY).append(MESSAGES[:2])
    old_id = sessions.live(KEY).meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("index_written"))
    sessions.live(KEY).append(MESSAGES[2:])  # another process went on in the conversation
    sessions.live(KEY).mark(4, seen=True)
    for _ in range(2):
        sessions.recover(min_age=0)
        (entry,) = sessions.archive.entries()
        assert sessions.archive.read_messages(entry) == (MESSAGES[:2], 2)
        live = sessions.live(KEY)
        assert live.meta.session_id != old_id
        assert live.messages == [*MESSAGES[2:4], {**MESSAGES[4], "seen": True}, MESSAGES[5]]
    assert len(_every_message(sessions)) == len(MESSAGES)


async def test_recover_leaves_a_conversation_with_a_turn_under_way_for_its_next_pass(
    backend: Backend,
) -> None:
    sessions = backend.sessions
    sessions.live(KEY).append(MESSAGES[:2])
    old_id = sessions.live(KEY).meta.session_id
    with pytest.raises(Crash):
        close(sessions, fault=crash_at("index_written"))
    sessions.live(KEY).append(MESSAGES[2:])
    async with backend.reopen().sessions.turn(KEY):  # another worker is answering there
        sessions.recover(min_age=0)
        assert sessions.live(KEY).meta.session_id == old_id
    sessions.recover(min_age=0)
    assert sessions.live(KEY).messages == MESSAGES[2:]


# -- presence ---------------------------------------------------------------------------


def test_a_key_is_attached_while_held_and_only_once(sessions: SessionStore) -> None:
    assert not sessions.attached(KEY)
    with sessions.attach(KEY) as mine:
        assert mine and sessions.attached(KEY)
        assert not sessions.attached(GROUP)
        with sessions.attach(KEY) as again:
            assert not again
        assert sessions.attached(KEY)
    assert not sessions.attached(KEY)
    with sessions.attach(KEY) as later:
        assert later


async def test_a_turn_is_held_per_key_and_free_again_after(sessions: SessionStore) -> None:
    async with sessions.turn(KEY), sessions.turn(GROUP):  # another key never waits
        pass
    async with sessions.turn(KEY):  # released: held again at once
        pass


async def test_a_turn_held_by_another_process_is_waited_for_until_released(
    backend: Backend,
) -> None:
    other = backend.reopen().sessions  # another process or worker on the same storage
    entered: list[str] = []

    async def second_turn() -> None:
        async with other.turn(KEY):
            entered.append("second")

    async with backend.sessions.turn(KEY):
        waiting = asyncio.create_task(second_turn())
        async with other.turn(GROUP):  # another conversation's turn goes ahead
            entered.append("group")
        await asyncio.sleep(0.3)
        assert entered == ["group"]  # the second turn of KEY still waits
    await asyncio.wait_for(waiting, timeout=10)
    assert entered == ["group", "second"]


def test_a_replys_why_record_is_kept_through_reload_and_archive(backend: Backend) -> None:
    why = {
        "memories": [3, 12],
        "hits": {"memory_search": [["message", "a1b2", 4, 1764493200]]},
        "files": ["USER.md"],
        "skills": ["git"],
    }
    reply: Message = {"role": "assistant", "content": "Джаз · 爵士", "why": why}
    backend.sessions.live(KEY).append([MESSAGES[0], reply])
    assert backend.reopen().sessions.live(KEY).messages[1]["why"] == why
    entry = close(backend.sessions)
    assert entry is not None
    assert backend.reopen().sessions.archive.read_messages(entry)[0][1]["why"] == why


# -- transcripts written without a live session (an import) and removed ------------------


def test_a_transcript_written_and_indexed_directly_reads_back_with_its_metadata(
    backend: Backend,
) -> None:
    from lore.ports.sessions import SessionMeta

    archive = backend.sessions.archive
    meta = SessionMeta(
        "imported-1",
        KEY,
        "2024-03-01T10:00:00+00:00",
        "2024-03-01T10:05:00+00:00",
        extra={"title": "签证 visa", "source": "chatgpt"},
    )
    entry = archive.write_transcript(
        meta, MESSAGES[:2], ended_at=ENDED, zone=TAIPEI, slug="visa", reason="import", fault=None
    )
    archive.append_index(entry)
    assert backend.sessions.live_keys() == []  # no live session was made
    found = backend.reopen().sessions.archive
    stored = found.get("imported-1")
    assert stored is not None and stored.created_at == "2024-03-01T10:00:00+00:00"
    assert found.read_messages(stored)[0] == MESSAGES[:2]
    assert found.metadata(stored)["extra"] == {"title": "签证 visa", "source": "chatgpt"}


def test_removed_sessions_leave_the_index_and_their_transcripts(backend: Backend) -> None:
    archive = backend.sessions.archive
    backend.sessions.live(KEY).append(MESSAGES)
    first = close(backend.sessions)
    backend.sessions.live(GROUP).append(MESSAGES[:2])
    second = close(backend.sessions, GROUP)
    assert first is not None and second is not None
    before = archive.stamp()
    assert archive.remove([first.session_id, "no-such-session"]) == 1
    assert archive.stamp() != before
    reopened = backend.reopen().sessions.archive
    assert [e.session_id for e in reopened.entries()] == [second.session_id]
    assert reopened.get(first.session_id) is None
    with pytest.raises(SessionError):
        reopened.read_messages(first)
    assert archive.remove([first.session_id]) == 0  # again: nothing left to do
