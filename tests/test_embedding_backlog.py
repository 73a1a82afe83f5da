"""After `lore memory import --no-vectors`, a chat turn embeds only what that turn wrote:
the backlog is `lore serve`'s work (or `lore index rebuild`'s), `lore index stats` says
how much waits, and memory_search says its results are text-only for those entries."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from lore.channels.terminal import run_once
from lore.cli import main
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime
from lore.search import embed_backlog_forever, searcher

HOME = "cli:default"
IMPORTED = 40


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        json.dumps(
            {
                "content": f"Old fact number {i} about the garden",
                "author": "john",
                "created_at": "2025-03-01T09:00:00+00:00",
            }
        )
        for i in range(IMPORTED)
    ]
    dump = tmp_path / "old.jsonl"
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["memory", "import", str(dump), "--no-vectors"]) == 0
    capsys.readouterr()


async def test_a_chat_turn_embeds_its_own_memory_and_leaves_the_backlog(
    lore: Runtime, model: ScriptedProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, capsys)
    model.tool_call("remember", {"content": "John planted tulips today"}).reply("Noted.")
    out, err = io.StringIO(), io.StringIO()
    assert await run_once(lore, HOME, "I planted tulips today", out=out, err=err) == 0
    index = searcher(lore).index
    assert index.stats().entries["memory"] == IMPORTED + 1
    assert index.pending_vectors() == IMPORTED  # the turn's memory was embedded, no more


def test_index_stats_says_how_much_is_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, capsys)
    assert main(["index", "stats"]) == 0
    assert f"({IMPORTED} waiting)" in capsys.readouterr().out


async def test_memory_search_says_when_its_results_are_text_only(
    lore: Runtime, model: ScriptedProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, capsys)
    model.tool_call("memory_search", {"query": "garden"}).reply("Found them.")
    await run_once(lore, HOME, "what about the garden?", out=io.StringIO(), err=io.StringIO())
    (result,) = [m["content"] for m in lore.session(HOME).messages if m["role"] == "tool"]
    assert f"Text-only for {IMPORTED} entries not yet embedded" in result


async def test_serve_works_off_the_backlog(
    lore: Runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, capsys)
    index = searcher(lore).index
    searcher(lore).refresh()
    assert index.pending_vectors() == IMPORTED
    task = asyncio.create_task(embed_backlog_forever(lore, idle_seconds=0.05))
    for _ in range(600):
        if index.pending_vectors() == 0:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    assert index.pending_vectors() == 0


async def test_a_one_shot_turn_leaves_its_messages_to_the_next_process_found_by_text_meanwhile(
    lore: Runtime, model: ScriptedProvider
) -> None:
    """Loading the embedder for two messages would cost a one-shot process more than its
    turn: they wait, found by text, until a process that embeds anyway gives them vectors."""
    model.reply("Lovely, tulips in March!")
    out = io.StringIO()
    assert await run_once(lore, HOME, "the tulips are up", out=out, err=io.StringIO()) == 0
    found = searcher(lore)
    assert found.index.pending_vectors(kinds=("message",)) == 2
    hits = found.search("tulips", HOME, mode="text")
    assert {h.entry.text for h in hits} >= {"the tulips are up", "Lovely, tulips in March!"}
    found.search("tulips", HOME, embed_first=256)  # `lore memory search`, say
    assert found.index.pending_vectors() == 0


async def test_a_conversation_that_goes_on_embeds_each_turns_messages(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("Lovely, tulips in March!")
    await lore.conversation(HOME, emit=lambda event: None).send("the tulips are up")
    await lore.background.drain()
    assert searcher(lore).index.pending_vectors() == 0
