"""Lore on PostgreSQL end to end: `database_url` makes the runtime keep memories,
reminders, their deliveries, the search index, sessions and the history log there,
through real turns, tools and commands (the workspace's files stay files)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lore.backends.postgres.backend import PostgresBackend
from lore.cli import main
from lore.clock import FixedClock
from lore.config import load_config
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.runtime import Runtime, build

pytestmark = pytest.mark.postgres


@pytest.fixture
async def lore(
    home: Path, postgres_url: str, model: ScriptedProvider, clock: FixedClock
) -> AsyncIterator[Runtime]:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "john", "LORE_DATABASE_URL": postgres_url},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )
    runtime = build(config, provider=model, clock=clock)
    yield runtime
    await runtime.aclose()


async def test_a_turn_remembers_in_postgres_and_the_next_prompt_shows_it(
    lore: Runtime, model: ScriptedProvider, postgres_url: str, home: Path
) -> None:
    conversation = lore.conversation("cli:default", emit=lambda event: None)
    model.tool_call("remember", {"content": "John 住在花莲", "kind": "profile"}).reply("记住了。")
    await conversation.send("我住在花莲，记住")
    model.reply("花莲。")
    await conversation.send("我住在哪里？")
    [memory] = lore.memory.active("cli:default", now=lore.clock.now())
    assert f"#{memory.id} [profile] John 住在花莲" in model.requests[-1].system
    # It is in PostgreSQL, not in a lore.db beside the sessions.
    assert not (home / "lore.db").exists()
    other = PostgresBackend(postgres_url)
    try:
        assert [
            m.content for m in other.memory.search("cli:default", "花莲", now=lore.clock.now())
        ] == ["John 住在花莲"]
    finally:
        other.close()


async def test_memory_search_finds_a_memory_indexed_in_postgres(
    lore: Runtime, model: ScriptedProvider
) -> None:
    lore.memory.remember(
        "cli:default", "Мама живёт в Москве", author="john", via="cli", now=lore.clock.now()
    )
    model.tool_call("memory_search", {"query": "Москва"}).reply("В Москве.")
    await lore.conversation("cli:default", emit=lambda event: None).send("где живёт мама?")
    tool_result = model.requests[1].messages[-1]["content"]
    assert "Мама живёт в Москве" in tool_result


def test_remind_add_then_serve_once_delivers_from_postgres(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    home: Path,
    postgres_url: str,
) -> None:
    monkeypatch.setenv("LORE_DATABASE_URL", postgres_url)
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    monkeypatch.setenv("LORE_USER", "john")
    backend = PostgresBackend(postgres_url)
    now = datetime.now(UTC)
    try:
        backend.reminders.add("cli:default", "john", "water the plants", now - timedelta(minutes=5),
                              timezone="Asia/Taipei", now=now - timedelta(minutes=10))  # fmt: skip
    finally:
        backend.close()
    assert main(["serve", "--once"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"delivered reminder #1 to cli:default \(late\): water the plants", out)
    other = PostgresBackend(postgres_url)  # the session lives in PostgreSQL too
    try:
        [message] = other.sessions.live("cli:default").messages
    finally:
        other.close()
    assert not (home / "sessions" / "cli_default.jsonl").exists()
    assert content_text(message["content"]).startswith(
        "⏰ Reminder for @john: water the plants (late)"
    )
    assert main(["serve", "--once"]) == 0
    assert capsys.readouterr().out == ""  # nothing twice
    assert main(["remind", "list", "--all"]) == 0
    assert "water the plants" in capsys.readouterr().out


def test_index_rebuild_and_search_from_the_command_line_on_postgres(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    postgres_url: str,
) -> None:
    monkeypatch.setenv("LORE_DATABASE_URL", postgres_url)
    monkeypatch.setenv("LORE_USER", "john")
    assert main(["memory", "add", "我每天早上喝美式咖啡", "--keyword", "coffee"]) == 0
    assert main(["memory", "add", "Мама живёт в Москве"]) == 0
    assert main(["index", "rebuild"]) == 0
    capsys.readouterr()
    assert main(["index", "stats", "--json"]) == 0
    assert '"memory": 2' in capsys.readouterr().out
    assert main(["memory", "search", "Москва", "--json"]) == 0
    assert "Мама живёт в Москве" in capsys.readouterr().out
    assert main(["memory", "search", "coffee", "--json"]) == 0
    assert "美式咖啡" in capsys.readouterr().out


# -- the event loop never waits on a turn's appends ---------------------------------------


def _slow_appends(
    monkeypatch: pytest.MonkeyPatch,
    seconds: float,
    threads: list[int],
    second: threading.Event | None = None,
) -> None:
    """Every append takes `seconds` longer (a slow server), noting the thread it ran on;
    `second` is set as the second one begins."""
    from lore.backends.postgres.live import PostgresLiveSession

    append = PostgresLiveSession.append

    def slow(self: PostgresLiveSession, *args: Any, **kwargs: Any) -> None:
        threads.append(threading.get_ident())
        if second is not None and len(threads) == 2:
            second.set()
        time.sleep(seconds)
        append(self, *args, **kwargs)

    monkeypatch.setattr(PostgresLiveSession, "append", slow)


async def test_a_turn_appends_in_a_worker_thread_while_the_loop_goes_on(
    lore: Runtime, model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    _slow_appends(monkeypatch, 0.2, threads)
    model.reply("好的。")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    await lore.conversation("cli:default", emit=lambda event: None).send("你好")
    ticker.cancel()
    assert len(threads) == 2 and threading.get_ident() not in threads  # said, then the reply
    assert ticks >= 20  # the loop ran on through the 0.4 s of appends
    said, reply = lore.session("cli:default").messages
    assert (said["content"], reply["content"]) == ("你好", "好的。")


async def test_a_turn_cancelled_while_what_was_said_is_written_is_marked_cancelled(
    lore: Runtime, model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    _slow_appends(monkeypatch, 0.3, [])
    model.reply("不该出现")
    turn = asyncio.create_task(lore.conversation("cli:default", emit=lambda e: None).send("你好"))
    await asyncio.sleep(0.1)  # the append of what was said is under way in its thread
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    (said,) = lore.session("cli:default").messages
    assert said["content"] == "你好" and said["cancelled"] is True
    assert model.pending == 1  # the model was never asked


async def test_a_turn_cancelled_while_its_reply_is_stored_keeps_the_reply_whole(
    lore: Runtime, model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    storing = threading.Event()
    _slow_appends(monkeypatch, 0.3, [], storing)
    model.reply("好的。")
    turn = asyncio.create_task(lore.conversation("cli:default", emit=lambda e: None).send("你好"))
    assert await asyncio.to_thread(storing.wait, 10)  # the reply's append has begun
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    said, reply = lore.session("cli:default").messages
    assert reply["content"] == "好的。" and not said.get("cancelled")
