"""Consolidation under token pressure: whole turns leave the window as summaries, never lost."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from lore.backends.local.history import History
from lore.clock import FixedClock
from lore.config import Config, ConsolidationConfig, MemoryFlushConfig
from lore.errors import ProviderServerError
from lore.files import try_lock
from lore.keys import key_to_filename
from lore.llm.base import ChatRequest, Message
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.consolidation import (
    CONSOLIDATION_PROMPT,
    choose_boundary,
    maybe_consolidate,
)
from lore.memory.flush import FLUSH_PROMPT
from lore.messages import content_text
from lore.runtime import Runtime, build
from lore.search import searcher
from lore.sessions.closing import close_session

KEY = "cli:default"


def _summariser(request: ChatRequest) -> Step | str:
    """Summaries that quote every user line, so a test can find what was consolidated."""
    if request.system == CONSOLIDATION_PROMPT:
        said = re.findall(r"user \(john\): (.*)", content_text(request.messages[0]["content"]))
        return "Summary: " + " | ".join(said)
    if request.system == FLUSH_PROMPT:
        return "NONE"
    return "reply " + "ok " * 60


@pytest.fixture
async def quiet(
    config: Config, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, ScriptedProvider]]:
    """A small-window runtime without the flush, for driving passes directly."""
    model = ScriptedProvider(context_window=2000)
    runtime = build(
        replace(config, memory_flush=MemoryFlushConfig(enabled=False)), provider=model, clock=clock
    )
    yield runtime, model
    await runtime.aclose()


def _long_session(lore: Runtime, turns: int = 12, key: str = KEY) -> list[Message]:
    session = lore.session(key)
    for i in range(turns):
        session.append(
            [
                {"role": "user", "content": f"question {i} " + "word " * 40, "author": "john"},
                {"role": "assistant", "content": f"answer {i} " + "ok " * 40},
            ]
        )
    return session.messages


async def test_a_long_conversation_consolidates_at_user_turns_within_budget(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.context_window = 5000  # the tool definitions alone take about 1,800
    model.default = _summariser
    conversation = lore.conversation(KEY, emit=lambda e: None)
    said = [f"message {i}: " + "word " * 40 for i in range(40)]
    cuts: set[int] = set()
    for text in said:
        await conversation.send(text)
        await lore.background.drain()
        session = lore.session(KEY)
        cut = session.meta.last_consolidated
        cuts.add(cut)
        assert cut == 0 or session.messages[cut]["role"] == "user"
        system = conversation.system_prompt()
        budget = lore.history_budget(lore.tokens.count(system))
        window = sum(lore.tokens.count_messages([m]) for m in session.messages[cut:])
        assert window <= budget
    assert len(cuts) > 3  # it consolidated several times, a little at a time
    session = lore.session(KEY)
    # The transcript was never rewritten: every message is still there.
    assert [m["content"] for m in session.messages if m["role"] == "user"] == said
    # Everything said is in the window or in a history entry.
    history = " ".join(e.content for e in History(lore.workspace.memory_dir).entries())
    window_text = " ".join(str(m["content"]) for m in session.messages[cut:])
    for text in said:
        assert text.strip() in history or text in window_text
    chats = [r for r in model.requests if r.system.startswith("# Lore")]
    assert chats[-1].messages[0]["role"] == "user"
    assert "# Recent History" in chats[-1].system


async def test_a_short_conversation_is_never_consolidated(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.default = _summariser
    conversation = lore.conversation(KEY, emit=lambda e: None)
    for i in range(3):
        await conversation.send(f"hello {i}")
    await lore.background.drain()
    assert all(r.system.startswith("# Lore") for r in model.requests)
    assert lore.session(KEY).meta.last_consolidated == 0


async def test_a_pass_summarises_the_oldest_whole_turns_into_history(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet
    messages = _long_session(lore)
    model.respond_with(_summariser)
    done = await maybe_consolidate(lore, lore.session(KEY), system_tokens=100)
    assert done is not None and not done.raw
    assert done.start == 0 and messages[done.end]["role"] == "user"
    assert lore.session(KEY).meta.last_consolidated == done.end
    (entry,) = History(lore.workspace.memory_dir).entries()
    assert entry.session_key == KEY and entry.cursor == 1
    assert entry.timestamp == "2026-11-30T09:00:00+00:00"
    assert entry.content.startswith("Summary: question 0")
    sent = model.requests[0].messages[0]["content"]
    assert f"question {done.end // 2 - 1}" in sent and f"question {done.end // 2} " not in sent


async def test_the_summariser_reads_the_users_local_time_not_utc(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet  # in Asia/Taipei: 23:30 UTC on Nov 30 is 07:30 on Dec 1
    session = lore.session(KEY)
    for i in range(12):
        stamp = f"2026-11-30T23:{i:02d}:00+00:00"
        session.append(
            [
                {"role": "user", "content": f"今天是我生日 {i} " + "字" * 40, "timestamp": stamp},
                {"role": "assistant", "content": "生日快乐 " + "ok " * 40, "timestamp": stamp},
            ]
        )
    model.fail(ProviderServerError("down", status=503))
    done = await maybe_consolidate(lore, session, system_tokens=100)
    assert done is not None and done.raw
    sent = model.requests[0].messages[0]["content"]
    assert "[2026-12-01 07:00] user: 今天是我生日 0" in sent and "2026-11-30" not in sent
    (entry,) = History(lore.workspace.memory_dir).entries()
    assert "[2026-12-01 07:00]" in entry.content  # the [RAW] entry Dream will read


async def test_a_failed_summary_leaves_a_bounded_raw_entry_and_moves_on(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet
    _long_session(lore)
    model.fail(ProviderServerError("down", status=503))
    done = await maybe_consolidate(lore, lore.session(KEY), system_tokens=100)
    assert done is not None and done.raw
    (entry,) = History(lore.workspace.memory_dir).entries()
    assert entry.content.startswith("[RAW] ") and "question 0" in entry.content
    assert len(entry.content) < 2200
    assert lore.session(KEY).meta.last_consolidated == done.end


@pytest.mark.parametrize(
    "step",
    [Step(text=""), Step(text="Summary: quest", error_after_text=ProviderServerError("cut"))],
    ids=["empty", "cut-off"],
)
async def test_an_empty_or_cut_off_summary_is_raw(
    quiet: tuple[Runtime, ScriptedProvider], step: Step
) -> None:
    lore, model = quiet
    _long_session(lore)
    model.step(step)
    done = await maybe_consolidate(lore, lore.session(KEY), system_tokens=100)
    assert done is not None and done.raw


async def test_repeated_failures_put_the_raw_messages_in_the_raw_archive(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet
    # Small passes, so the window stays over its threshold for several of them.
    lore.config = replace(lore.config, consolidation=ConsolidationConfig(max_chunk_tokens=300))
    _long_session(lore, turns=40)
    session = lore.session(KEY)
    raw_archive = lore.workspace.memory_dir / "2026-11-30-raw-archive.md"
    for attempt in range(1, 4):
        model.fail(ProviderServerError("down", status=503))
        done = await maybe_consolidate(lore, session, system_tokens=100)
        assert done is not None and done.raw
        assert raw_archive.exists() == (attempt == 3)
    text = raw_archive.read_text(encoding="utf-8")
    assert done is not None
    for message in session.messages[done.start : done.end]:
        assert json.dumps(message, ensure_ascii=False) in text  # in full, not bounded
    model.respond_with(_summariser)
    done = await maybe_consolidate(lore, session, system_tokens=100)
    assert done is not None and not done.raw
    assert session.meta.extra["consolidation_failures"] == 0


async def test_a_groups_raw_archive_is_searchable_only_in_its_own_scope(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet
    group = "line:group:family"
    lore.config = replace(lore.config, consolidation=ConsolidationConfig(max_failures=1))
    _long_session(lore, turns=12, key=group)
    model.fail(ProviderServerError("down", status=503))
    done = await maybe_consolidate(lore, lore.session(group), system_tokens=100)
    assert done is not None and done.raw
    text = (lore.workspace.memory_dir / "2026-11-30-raw-archive.md").read_text(encoding="utf-8")
    assert "question 0" in text
    notes = lore.notes.notes("memory/2026-11-30-raw-archive.md")
    assert [note.scope for note in notes] == [group]
    assert searcher(lore).search("question", "cli:default", mode="text") == []
    assert searcher(lore).search("question", group, mode="text") != []


async def test_a_session_closed_during_the_pass_keeps_its_fresh_window(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet
    _long_session(lore)

    def close_meanwhile(request: ChatRequest) -> str:
        close_session(lore, KEY)  # /new while the summary is being written
        return "Summary"

    model.respond_with(close_meanwhile)
    assert await maybe_consolidate(lore, lore.session(KEY), system_tokens=100) is None
    assert lore.session(KEY).meta.last_consolidated == 0
    assert len(History(lore.workspace.memory_dir).entries()) == 1  # the summary is kept


def _turns(*sizes: int) -> tuple[list[Message], list[int]]:
    """Turns of (user, assistant) with the given token cost per message."""
    messages: list[Message] = []
    costs: list[int] = []
    for size in sizes:
        messages += [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
        costs += [size, size]
    return messages, costs


def test_the_cut_is_always_before_a_user_message() -> None:
    messages, costs = _turns(10, 10, 10, 10)
    messages.insert(3, {"role": "tool", "content": "result"})
    costs.insert(3, 10)
    cut = choose_boundary(messages, costs, start=0, keep_tokens=30, max_chunk_tokens=1000)
    assert cut is not None and messages[cut]["role"] == "user"


def test_the_cut_takes_the_least_that_reaches_the_target() -> None:
    messages, costs = _turns(10, 10, 10, 10)
    assert choose_boundary(messages, costs, start=0, keep_tokens=40, max_chunk_tokens=1000) == 4
    assert choose_boundary(messages, costs, start=0, keep_tokens=20, max_chunk_tokens=1000) == 6


def test_the_latest_turn_is_never_consolidated() -> None:
    messages, costs = _turns(10, 500)
    assert choose_boundary(messages, costs, start=0, keep_tokens=0, max_chunk_tokens=1000) == 2
    one, one_costs = _turns(500)
    assert choose_boundary(one, one_costs, start=0, keep_tokens=0, max_chunk_tokens=1000) is None


def test_a_pass_summarises_at_most_the_chunk_cap() -> None:
    messages, costs = _turns(10, 10, 10, 10, 10)
    assert choose_boundary(messages, costs, start=0, keep_tokens=0, max_chunk_tokens=45) == 4


def test_a_single_oversized_turn_still_makes_progress() -> None:
    messages, costs = _turns(100, 10, 10)
    assert choose_boundary(messages, costs, start=0, keep_tokens=0, max_chunk_tokens=50) == 2


def test_consolidation_settings_have_the_documented_defaults() -> None:
    settings = ConsolidationConfig()
    assert settings.threshold == 0.7 and settings.idle_minutes == 30
    assert settings.target < settings.threshold  # the safety buffer


async def test_a_pass_already_running_elsewhere_is_not_repeated(
    quiet: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = quiet
    _long_session(lore)
    lock = lore.config.sessions_dir / ".locks" / key_to_filename(KEY, ".consolidating.lock")
    with try_lock(lock) as free:
        assert free
        assert await maybe_consolidate(lore, lore.session(KEY), system_tokens=100) is None
    assert model.requests == []


def test_history_cursors_survive_a_crash_between_line_and_cursor_file(lore: Runtime) -> None:
    history = History(lore.workspace.memory_dir)
    now = lore.clock.now()
    assert history.append(KEY, "one", now=now).cursor == 1
    history.cursor_path.write_text("0\n")  # the line was written, the cursor file not
    assert history.append(KEY, "two", now=now).cursor == 2
    with history.path.open("ab") as f:
        f.write(b'{"cursor": 3, "content": "tor')  # killed mid-line
    assert [e.cursor for e in history.entries()] == [1, 2]
    assert history.append(KEY, "three", now=now).cursor == 3
    assert [e.content for e in history.entries()] == ["one", "two", "three"]


def test_pending_history_is_read_from_the_end(lore: Runtime) -> None:
    history = History(lore.workspace.memory_dir)
    now = lore.clock.now()
    for i in range(300):
        history.append(KEY if i % 2 else "telegram:1", f"entry {i} " + "字" * 200, now=now)
    history.set_dream_cursor(290)
    assert [e.cursor for e in history.entries(290)] == list(range(291, 301))
    mine = history.recent(KEY, after=None, limit=50)
    assert len(mine) == 50 and mine[-1].content.startswith("entry 299")
    assert all(e.session_key == KEY for e in mine)
    assert [e.cursor for e in history.recent(KEY, after=290)] == [292, 294, 296, 298, 300]
