"""`build` chooses the backend once, and the runtime hands out that backend's stores:
SQLite and files by default, PostgreSQL for `database_url`, or whatever it is given — the
in-memory backend, on which a whole turn runs with no database and no transcript file."""

from __future__ import annotations

from pathlib import Path

from lore.backends.fake.backend import FakeBackend
from lore.backends.fake.embedder import HashEmbedder
from lore.backends.local.backend import LocalBackend
from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.ports.backend import Backend
from lore.runtime import build
from lore.search import searcher


async def test_a_turn_runs_on_the_in_memory_backend_and_writes_no_database(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    backend: Backend = FakeBackend()  # mypy: the in-memory backend holds the port
    lore = build(config, provider=model, clock=clock, backend=backend)
    model.tool_call("remember", {"content": "我们从花莲搬到台北了"}).reply("记住了。")
    model.tool_call("set_reminder", {"text": "позвонить Анне", "when": "in 2 hours"})
    model.reply("Напомню.")
    chat = lore.conversation("cli:default", emit=lambda event: None)
    try:
        first = await chat.send("记住：我们从花莲搬到台北了")
        second = await chat.send("Напомни позвонить Анне через 2 часа")
        await lore.background.drain()
    finally:
        await lore.aclose()
        lore.close()
    assert first.result is not None and first.result.text == "记住了。"
    assert second.result is not None and second.result.text == "Напомню."
    now = clock.now()
    assert [m.content for m in backend.memory.active("cli:default", now=now)] == [
        "我们从花莲搬到台北了"
    ]
    assert [r.text for r in backend.reminders.list("cli:default")] == ["позвонить Анне"]
    assert len(backend.sessions.live("cli:default").messages) == 8
    hits = searcher(lore).search("台北", "cli:default", now=now)
    assert hits and "台北" in hits[0].entry.text
    assert not (config.home / "lore.db").exists()
    assert not list(config.sessions_dir.glob("*.jsonl"))


def test_by_default_the_home_is_sqlite_and_files_opened_only_as_needed(
    config: Config, model: ScriptedProvider
) -> None:
    lore = build(config, provider=model)
    assert isinstance(lore.backend, LocalBackend)
    assert lore.backend is lore.backend  # chosen once
    lore.reminders  # noqa: B018
    assert lore.db is lore.backend.db  # the one connection to lore.db
    assert "sessions" not in lore.backend.__dict__  # what was not asked for is not opened
    lore.close()


def test_the_embedder_given_to_build_is_the_one_search_uses(
    config: Config, model: ScriptedProvider, tmp_path: Path
) -> None:
    embedder = HashEmbedder()
    for backend in (None, FakeBackend(embedder=embedder)):
        lore = build(config, provider=model, backend=backend, embedder=embedder)
        assert lore.search_index.embedder is embedder
        lore.close()
