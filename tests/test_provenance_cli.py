"""`lore sessions show --why`: each reply with what it rested on, as text and JSON."""

from __future__ import annotations

import json

import pytest

from lore.cli import main
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime

SCOPE = "cli:default"


def _note(lore: Runtime, content: str) -> int:
    memory, _ = lore.memory.remember(SCOPE, content, author="john", via="cli", now=lore.clock.now())
    return memory.id


async def _send(lore: Runtime, text: str) -> str:
    return (await lore.conversation(SCOPE, emit=lambda e: None).send(text)).text


async def test_sessions_show_why_prints_under_each_reply_what_it_rested_on(
    lore: Runtime, model: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tea = _note(lore, "John drinks oolong")
    model.reply("Oolong.")
    await _send(lore, "tea?")
    await _send(lore, "/new")
    [entry] = lore.sessions.archive.entries()
    capsys.readouterr()
    assert main(["sessions", "show", entry.session_id[:8], "--why"]) == 0
    out = capsys.readouterr().out
    assert "Why message 1:" in out and f"#{tea} John drinks oolong" in out
    assert main(["sessions", "show", entry.session_id[:8]]) == 0
    assert "Why message" not in capsys.readouterr().out


async def test_sessions_show_why_json_gives_each_replys_memories_as_they_are_now(
    lore: Runtime, model: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tea = _note(lore, "约翰喝乌龙茶")
    model.reply("乌龙。")
    await _send(lore, "茶？")
    session_id = lore.session(SCOPE).meta.session_id
    capsys.readouterr()
    assert main(["sessions", "show", session_id, "--why", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    why = data["messages"][1]["why"]
    assert why["memories"] == [{"id": tea, "status": "active", "text": "约翰喝乌龙茶"}]
    assert "why" not in data["messages"][0]
