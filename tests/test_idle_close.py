"""Idle close: a session left alone longer than idle_minutes is closed as by /new."""

from __future__ import annotations

import json
from dataclasses import replace

from lore.clock import FixedClock
from lore.config import ConsolidationConfig
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.session_summary import SUMMARY_PROMPT
from lore.runtime import Runtime
from lore.sessions.closing import close_idle_sessions, close_if_idle
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

KEY = "cli:default"


def _talk(lore: Runtime, key: str = KEY, *said: str) -> str:
    """A session whose last activity is the clock's now; returns its id."""
    session = lore.session(key)
    stamp = lore.clock.now().isoformat(timespec="seconds")
    for text in said or ("I go to Hualien on Friday", "Book the train"):
        session.append(
            [
                {"role": "user", "content": text, "timestamp": stamp},
                {"role": "assistant", "content": "ok", "timestamp": stamp},
            ]
        )
    session.update_meta(updated_at=stamp)
    return session.meta.session_id


def _summary_reply(model: ScriptedProvider) -> None:
    model.reply(
        json.dumps(
            {
                "slug": "hualien-trip",
                "summary": "John goes to Hualien on Friday; the train is not booked yet.",
                "key_messages": ["I go to Hualien on Friday"],
            }
        )
    )


async def test_a_session_idle_past_the_limit_is_closed(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    old_id = _talk(lore)
    clock.advance(minutes=31)
    _summary_reply(model)
    entry = await close_if_idle(lore, KEY)
    await lore.background.drain()
    assert entry is not None and entry.session_id == old_id and entry.reason == "idle"
    fresh = lore.session(KEY)
    assert fresh.messages == [] and fresh.meta.session_id != old_id
    assert fresh.meta.extra["previous_session_id"] == old_id
    (archived,) = lore.sessions.archive.entries()
    assert archived.summary == "written"


async def test_a_recent_session_stays_open(lore: Runtime, clock: FixedClock) -> None:
    old_id = _talk(lore)
    clock.advance(minutes=29)
    assert await close_if_idle(lore, KEY) is None
    assert lore.session(KEY).meta.session_id == old_id


async def test_the_idle_limit_is_configurable(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    lore.config = replace(lore.config, consolidation=ConsolidationConfig(idle_minutes=5))
    _talk(lore, KEY, "one")
    clock.advance(minutes=6)
    assert await close_if_idle(lore, KEY) is not None
    lore.config = replace(lore.config, consolidation=ConsolidationConfig(idle_minutes=0))
    _talk(lore, KEY, "two")
    clock.advance(days=30)
    assert await close_if_idle(lore, KEY) is None  # 0 turns idle close off


async def test_an_empty_session_is_left_alone(lore: Runtime, clock: FixedClock) -> None:
    lore.session(KEY)
    clock.advance(hours=5)
    assert await close_if_idle(lore, KEY) is None
    assert await close_if_idle(lore, "never:seen") is None
    assert lore.sessions.archive.entries() == []


async def test_serve_closes_every_idle_session(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    model.default = Step(text="{}")  # unusable summaries: raw digests, not under test here
    idle_cli = _talk(lore, KEY)
    idle_group = _talk(lore, "line:group:C1", "我们周五去花莲", "好")
    clock.advance(minutes=40)
    busy = _talk(lore, "telegram:42", "still here")
    closed = await close_idle_sessions(lore)
    await lore.background.drain()
    assert sorted(e.session_id for e in closed) == sorted([idle_cli, idle_group])
    assert lore.session("telegram:42").meta.session_id == busy


async def test_after_an_idle_close_the_next_turn_sees_the_archived_summary(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    _talk(lore)
    clock.advance(hours=2)
    _summary_reply(model)
    await close_if_idle(lore, KEY)
    await lore.background.drain()
    model.reply("Yes, on Friday.")
    await lore.conversation(KEY, emit=lambda e: None).send("Am I still going?")
    system = model.requests[-1].system
    assert "# Archived Context Summary" in system
    assert "John goes to Hualien on Friday; the train is not booked yet." in system


async def test_an_explicit_new_does_not_carry_the_summary_over(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = lore.conversation(KEY, emit=lambda e: None)
    _talk(lore)
    _summary_reply(model)
    await conversation.send("/new")
    await lore.background.drain()
    model.reply("Hello.")
    await conversation.send("hi")
    assert "Archived Context Summary" not in model.requests[-1].system


async def test_the_first_turn_after_an_idle_close_knows_where_the_past_is(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    # `lore chat -m` closes the idle session and runs the turn while the summary is written.
    old_id = _talk(lore)
    clock.advance(hours=2)

    def answer(request: ChatRequest) -> Step | str:
        if request.system == SUMMARY_PROMPT:
            return Step(text=json.dumps({"slug": "x", "summary": "y"}), delay=0.5)
        return "Let me look."

    model.respond_with(answer).respond_with(answer)
    await close_if_idle(lore, KEY)
    await lore.conversation(KEY, emit=lambda e: None).send("What did we decide?")
    system = next(r.system for r in model.requests if r.system.startswith("# Lore"))
    assert "# Archived Context Summary" in system
    assert f'session_history(session_id="{old_id}")' in system
    await lore.background.drain()


async def test_the_first_turn_after_an_idle_close_sees_how_the_session_ended(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    """`lore chat -m` right after an idle close runs before the summary is written: the
    turn gets the previous session's last messages instead of nothing."""
    import io

    from lore.channels.terminal import run_once

    _talk(lore, KEY, "I go to Hualien on Friday", "Book the 9:10 train for me")
    clock.advance(minutes=31)
    seen: list[str] = []

    def answer(request: ChatRequest) -> Step | str:
        if request.system == SUMMARY_PROMPT:
            return "{}"
        seen.append(request.system)
        return "Which day?"

    model.default = answer
    assert await run_once(lore, KEY, "what did I ask you?", out=io.StringIO(),
                          err=io.StringIO()) == 0  # fmt: skip
    (system,) = seen
    assert "<archived_summary>" in system and "Book the 9:10 train for me" in system
