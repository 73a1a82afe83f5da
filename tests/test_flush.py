"""The pre-compaction flush: durable notes go to memory/YYYY-MM-DD.md before history leaves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from lore.backends.local.history import History
from lore.clock import FixedClock
from lore.config import Config, MemoryFlushConfig
from lore.errors import ProviderServerError
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider
from lore.memory.consolidation import CONSOLIDATION_PROMPT, maybe_consolidate
from lore.memory.flush import FLUSH_PROMPT
from lore.runtime import Runtime, build
from lore.search import searcher

KEY = "cli:default"


@pytest.fixture
async def small(
    config: Config, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, ScriptedProvider]]:
    model = ScriptedProvider(context_window=2000)
    runtime = build(config, provider=model, clock=clock)
    yield runtime, model
    await runtime.aclose()


def _fill(lore: Runtime, key: str = KEY) -> None:
    session = lore.session(key)
    for i in range(12):
        session.append(
            [
                {"role": "user", "content": f"我叫小明，第{i}次" + "字" * 60, "author": "john"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": f"c{i}", "name": "lookup", "arguments": "{}"}],
                },
                {
                    "role": "tool",
                    "tool_call_id": f"c{i}",
                    "name": "lookup",
                    "content": "SECRET-TOOL",
                },
                {"role": "assistant", "content": f"好的 {i}"},
            ]
        )


def _daily(lore: Runtime) -> str:
    return (lore.workspace.memory_dir / "2026-11-30.md").read_text(encoding="utf-8")


async def test_durable_notes_go_to_the_daily_file_before_the_summary(
    small: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = small
    _fill(lore)
    model.reply("- 用户叫小明\n- Next step: book the train").reply("摘要")
    done = await maybe_consolidate(lore, lore.session(KEY), system_tokens=100)
    assert done is not None
    flush, summary = model.requests
    assert flush.system == FLUSH_PROMPT and summary.system == CONSOLIDATION_PROMPT
    assert "SECRET-TOOL" not in flush.messages[0]["content"]  # user and assistant only
    assert "我叫小明，第0次" in flush.messages[0]["content"]
    # 09:00 UTC is 17:00 in Asia/Taipei.
    assert _daily(lore) == (
        "# 2026-11-30\n\n## 17:00 · cli:default\n\n- 用户叫小明\n- Next step: book the train\n\n"
    )


async def test_a_second_flush_appends_under_its_own_heading(
    small: tuple[Runtime, ScriptedProvider], clock: FixedClock
) -> None:
    lore, model = small
    _fill(lore)
    model.reply("- first").reply("summary one")
    await maybe_consolidate(lore, lore.session(KEY), system_tokens=100)
    clock.advance(minutes=5)
    _fill(lore, "telegram:42")
    model.reply("- second").reply("summary two")
    await maybe_consolidate(lore, lore.session("telegram:42"), system_tokens=100)
    text = _daily(lore)
    assert text.count("# 2026-11-30\n") == 1
    assert "## 17:00 · cli:default\n\n- first" in text
    assert "## 17:05 · telegram:42\n\n- second" in text


async def test_a_groups_notes_stay_in_the_groups_scope_whatever_headings_the_model_writes(
    small: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = small
    group = "line:group:family"
    _fill(lore, group)
    model.reply("## Decisions\n- 全家五月去花莲\n#\u3000计划\n- 订火车票").reply("摘要")
    await maybe_consolidate(lore, lore.session(group), system_tokens=100)
    assert "花莲" in _daily(lore)
    assert {note.scope for note in lore.notes.notes("memory/2026-11-30.md")} == {group}
    found = searcher(lore).search("花莲", group, mode="text")
    assert any("花莲" in hit.entry.text for hit in found)
    assert searcher(lore).search("花莲", "cli:default", mode="text") == []


async def test_nothing_durable_writes_no_note(small: tuple[Runtime, ScriptedProvider]) -> None:
    lore, model = small
    _fill(lore)
    model.reply("NONE").reply("summary")
    assert await maybe_consolidate(lore, lore.session(KEY), system_tokens=100) is not None
    assert not (lore.workspace.memory_dir / "2026-11-30.md").exists()


async def test_a_failed_flush_does_not_stop_consolidation(
    small: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = small
    _fill(lore)
    model.fail(ProviderServerError("down", status=503)).reply("summary")
    done = await maybe_consolidate(lore, lore.session(KEY), system_tokens=100)
    assert done is not None and not done.raw
    assert [e.content for e in History(lore.workspace.memory_dir).entries()] == ["summary"]


async def test_the_flush_can_be_turned_off(small: tuple[Runtime, ScriptedProvider]) -> None:
    lore, model = small
    lore.config = replace(lore.config, memory_flush=MemoryFlushConfig(enabled=False))
    _fill(lore)
    model.reply("summary")
    assert await maybe_consolidate(lore, lore.session(KEY), system_tokens=100) is not None
    assert [r.system for r in model.requests] == [CONSOLIDATION_PROMPT]


def test_the_flush_is_on_by_default(config: Config) -> None:
    assert config.memory_flush.enabled is True


async def test_no_flush_when_the_window_is_not_under_pressure(
    small: tuple[Runtime, ScriptedProvider],
) -> None:
    lore, model = small
    lore.session(KEY).append([{"role": "user", "content": "hi"}])

    def never(request: ChatRequest) -> str:
        raise AssertionError("no model call expected")

    model.default = never
    assert await maybe_consolidate(lore, lore.session(KEY), system_tokens=100) is None
