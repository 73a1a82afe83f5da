"""Why a reply said what it said: each reply keeps the ids and sources it rested on
(memories in the block, search hits, files read, skills loaded), shown by /why, the REST
route, the web page and `lore sessions show --why`; forgotten memories show as such."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

SCOPE = "cli:default"


def _note(lore: Runtime, content: str, scope: str = SCOPE) -> int:
    memory, _ = lore.memory.remember(scope, content, author="john", via="cli", now=lore.clock.now())
    return memory.id


async def _send(lore: Runtime, text: str, **kwargs: Any) -> str:
    return (await lore.conversation(SCOPE, emit=lambda e: None, **kwargs).send(text)).text


def _last_reply(lore: Runtime) -> dict[str, Any]:
    session = lore.session(SCOPE)
    session.refresh()
    return dict(session.messages[-1])


async def test_a_reply_records_the_memory_ids_of_its_block_and_no_text(
    lore: Runtime, model: ScriptedProvider
) -> None:
    jazz = _note(lore, "John loves jazz music")
    tea = _note(lore, "Джон пьёт улун · 约翰喝乌龙茶")
    model.reply("You like jazz.")
    await _send(lore, "what music do I like?")
    reply = _last_reply(lore)
    assert reply["role"] == "assistant" and reply["why"]["memories"] == sorted([jazz, tea])
    stored = json.dumps(reply["why"], ensure_ascii=False)
    assert "jazz" not in stored and "улун" not in stored and "乌龙" not in stored


async def test_a_reply_records_the_search_hits_its_tools_returned(
    lore: Runtime, model: ScriptedProvider
) -> None:
    lore.session(SCOPE).append(
        [
            {"role": "user", "content": "我们决定用 Postgres 做商店的数据库"},
            {"role": "assistant", "content": "好的，Postgres。"},
        ]
    )
    await _send(lore, "/new")
    [entry] = lore.sessions.archive.entries()
    model.tool_call("memory_search", {"query": "商店的数据库 Postgres"})
    model.tool_call("session_history", {"session_id": entry.session_id}).reply("Postgres.")
    await _send(lore, "which database did we pick?")
    hits = _last_reply(lore)["why"]["hits"]
    found = {(tool, kind, source) for tool, rows in hits.items() for kind, source, _, _ in rows}
    assert ("memory_search", "message", entry.session_id) in found
    assert ("session_history", "session", entry.session_id) in found
    assert all(at > 0 for rows in hits.values() for *_, at in rows)
    assert "Postgres" not in json.dumps(hits)


async def test_a_reply_records_the_files_it_read_and_the_files_injected(
    lore: Runtime, model: ScriptedProvider, tmp_path: Path
) -> None:
    (lore.workspace.root / "USER.md").write_text("John lives in Taipei.\n", encoding="utf-8")
    project = tmp_path / "shop"
    project.mkdir()
    (project / "README.md").write_text("# Shop\n", encoding="utf-8")
    model.tool_call("read_file", {"path": "README.md"}).reply("It is a shop.")
    await _send(lore, "read it", project=project)
    assert "README.md" in _last_reply(lore)["why"]["files"]
    model.reply("Taipei.")
    await _send(lore, "where do I live?")
    assert "USER.md" in _last_reply(lore)["why"]["files"]


async def test_a_reply_records_the_files_whose_lines_grep_showed(
    lore: Runtime, model: ScriptedProvider, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "价格.md").write_text("乌龙茶 120 元\n", encoding="utf-8")
    (project / "notes.txt").write_text("Улун по пятницам\n", encoding="utf-8")
    (project / "other.txt").write_text("nothing here\n", encoding="utf-8")
    model.tool_call("grep", {"pattern": "乌龙茶|Улун"}).reply("120 元.")
    await _send(lore, "how much is the oolong?", project=project)
    files = _last_reply(lore)["why"]["files"]
    assert sorted(files) == ["docs/价格.md", "notes.txt"]


async def test_why_shows_the_last_reply_or_message_n_with_current_texts(
    lore: Runtime, model: ScriptedProvider
) -> None:
    jazz = _note(lore, "John loves jazz music")
    model.reply("Jazz.").reply("Still jazz.")
    await _send(lore, "music?")
    await _send(lore, "音乐？")
    out = await _send(lore, "/why")
    assert out.startswith("Why message 3:") and f"#{jazz} John loves jazz music" in out
    assert (await _send(lore, "/why 1")).startswith("Why message 1:")
    assert "not a reply" in await _send(lore, "/why 0")
    assert "no message 99" in await _send(lore, "/why 99")
    assert "message number" in await _send(lore, "/why jazz")


async def test_forgetting_a_memory_marks_it_forgotten_in_every_why(
    lore: Runtime, model: ScriptedProvider
) -> None:
    wife = _note(lore, "Жена Джона — Анна")
    model.tool_call("memory_search", {"query": "Анна"}).reply("Анна.")
    await _send(lore, "кто моя жена?")
    before = await _send(lore, "/why")
    assert f"#{wife} Жена Джона — Анна" in before
    lore.memory.forget(SCOPE, wife, by="john", via="cli", now=lore.clock.now())
    after = await _send(lore, "/why 3")
    assert f"#{wife} forgotten" in after and f"memory #{wife}" in after
    assert "Анна" not in after
    # The record itself never held the text (the tool's result in the transcript does,
    # until `forget --everywhere`).
    assert "Жена" not in json.dumps(_last_reply(lore)["why"], ensure_ascii=False)


async def test_why_survives_new_and_a_reload_by_another_process(
    lore: Runtime, model: ScriptedProvider, config: Config
) -> None:
    tea = _note(lore, "John drinks oolong")
    model.reply("Oolong.")
    await _send(lore, "tea?")
    again = build(config, provider=ScriptedProvider(), clock=lore.clock)
    try:
        out = (await again.conversation(SCOPE, emit=lambda e: None).send("/why")).text
    finally:
        await again.aclose()
    assert f"#{tea} John drinks oolong" in out
    await _send(lore, "/new")
    [entry] = lore.sessions.archive.entries()
    [_, reply], _ = lore.sessions.archive.read_messages(entry)
    assert reply["why"]["memories"] == [tea]
