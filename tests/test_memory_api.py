"""`lore.Memory` and `lore.AsyncMemory`: Lore's memory inside another program, running the
assistant's own code (the store's rules, extraction, forgetting, search, the block)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import lore
from lore.backends.fake.embedder import HashEmbedder
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.errors import InvalidInputError, LoreError, NotFoundError, ProviderServerError
from lore.llm.scripted import ScriptedProvider


@pytest.fixture
def config(home: Path) -> Config:
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei"},
    )


@pytest.fixture
def memory(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[lore.Memory]:
    with lore.Memory(config=config, provider=model, clock=clock) as opened:
        yield opened


def test_remember_search_and_forget_in_three_languages(memory: lore.Memory) -> None:
    texts = ["John lives in Hualien", "约翰喜欢喝美式咖啡", "Иван живёт в Казани"]
    ids = [memory.remember(text, scope="api:alice").id for text in texts]
    for query, wanted in [("Hualien", ids[0]), ("美式咖啡", ids[1]), ("Казани", ids[2])]:
        [hit, *_] = memory.search(query, scope="api:alice")
        assert (hit.kind, hit.id, hit.locator) == ("memory", wanted, f"memory #{wanted}")
        assert hit.source == {"kind": "memory", "memory_id": wanted} and hit.score > 0
        assert hit.time.tzinfo is not None and hit.superseded_by is None
    assert memory.search("Казани", scope="api:bob") == []  # another scope sees nothing
    gone = memory.forget(ids[2], scope="api:alice")
    assert gone.id == ids[2] and gone.erased == (ids[2],)
    assert memory.search("Казани", scope="api:alice") == []


def test_the_hit_type_is_frozen(memory: lore.Memory) -> None:
    memory.remember("John lives in Hualien")
    [hit] = memory.search("Hualien")
    with pytest.raises(AttributeError):
        hit.text = "changed"  # type: ignore[misc]


def test_add_without_a_model_keeps_the_text_through_the_store_rules(
    home: Path, clock: FixedClock
) -> None:
    # No model configured (the offline default cannot extract): the text is one memory.
    with lore.Memory(home=home, clock=clock) as memory:
        added = memory.add("约翰的妻子生日是三月三日", author="mary")
        assert not added.extracted
        [record] = added.memories
        assert (record.content, record.author) == ("约翰的妻子生日是三月三日", "mary")
        assert memory.add("约翰的妻子生日是三月三日").memories == ()  # a duplicate
        with pytest.raises(InvalidInputError, match="password"):
            memory.add("My wifi password is hunter2hunter2")
        with pytest.raises(InvalidInputError, match="500"):
            memory.add("x" * 501)


def test_add_extracts_with_the_configured_model_and_supersedes(
    memory: lore.Memory, model: ScriptedProvider
) -> None:
    old = memory.remember("Иван живёт в Казани", kind="profile")
    ops = [
        {"op": "update", "id": old.id, "content": "Иван живёт в Москве"},
        {"op": "add", "content": "Иван работает врачом", "kind": "fact"},
    ]
    model.reply(json.dumps(ops, ensure_ascii=False))
    added = memory.add(
        [
            {"role": "user", "content": "На самом деле я переехал в Москву, работаю врачом"},
            {"role": "assistant", "content": "Понял."},
        ]
    )
    assert added.extracted
    assert sorted(m.content for m in added.memories) == [
        "Иван живёт в Москве",
        "Иван работает врачом",
    ]
    assert any(n.startswith(f"updated #{old.id}") for n in added.notices)
    # The extraction prompt saw the exchange and the memory it could correct, by id.
    prompt = model.requests[-1].messages[-1]["content"]
    assert f"#{old.id} [profile] Иван живёт в Казани" in prompt and "Понял." in prompt
    moved = next(m for m in added.memories if "Москве" in m.content)
    actions = [entry.action for entry in memory.history(moved.id)]
    assert actions == ["add", "update"]
    [hit] = [h for h in memory.search("Москве") if h.kind == "memory"]
    assert hit.id == moved.id


def test_add_says_when_the_model_failed_and_nothing_was_noted(
    memory: lore.Memory, model: ScriptedProvider
) -> None:
    model.fail(ProviderServerError("down", status=503)).fail(
        ProviderServerError("down", status=503)
    )
    with pytest.raises(ProviderServerError):
        memory.add("Je m'appelle Jean et j'habite à Lyon")
    model.reply("not json at all").reply("still not json")
    with pytest.raises(LoreError):
        memory.add("约翰住在花莲")
    assert memory.block().shown == ()


def test_forget_by_phrase_refuses_a_phrase_several_memories_hold(memory: lore.Memory) -> None:
    coffee = memory.remember("John drinks coffee every morning")
    tea = memory.remember("John's coffee mug is blue")
    with pytest.raises(InvalidInputError) as refused:
        memory.forget(phrase="coffee")
    message = str(refused.value)
    assert "\n" not in message and f"#{coffee.id}" in message and f"#{tea.id}" in message
    with pytest.raises(NotFoundError):
        memory.forget(phrase="tea")
    assert memory.forget(phrase="MUG IS BLUE").id == tea.id
    assert [h.id for h in memory.search("coffee")] == [coffee.id]
    with pytest.raises(InvalidInputError):
        memory.forget(coffee.id, phrase="coffee")
    with pytest.raises(InvalidInputError):
        memory.forget()


def test_forget_everywhere_erases_the_copy_in_the_notes(memory: lore.Memory) -> None:
    noted = memory.remember("John's locker number is 4417 at the gym")
    notes = memory.runtime.config.workspace / "memory" / "2026-11-30.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("- John's locker number is 4417 at the gym\n", encoding="utf-8")
    gone = memory.forget(noted.id, everywhere=True)
    assert gone.erased == (noted.id,) and gone.everywhere[0].startswith("Forget everywhere")
    assert "4417" not in notes.read_text(encoding="utf-8")
    assert memory.search("locker") == []


def test_search_when_keeps_what_was_said_then(memory: lore.Memory) -> None:
    memory.remember("约翰住在花莲")
    assert [h.kind for h in memory.search("花莲")] == ["memory"]
    assert memory.search("花莲", when="last year") == []
    assert [h.kind for h in memory.search("花莲", when="2026-11")] == ["memory"]
    with pytest.raises(InvalidInputError, match="could not read the time"):
        memory.search("花莲", when="a fortnight of Sundays")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.search(""), "some words"),
        (lambda m: m.search("x", limit=0), "limit"),
        (lambda m: m.remember("x", scope=""), "empty"),
        (lambda m: m.remember("x", kind="mood"), "kind"),
        (lambda m: m.add([{"role": "robot", "content": "hi"}]), "role"),
        (lambda m: m.add("   "), "nothing to add"),
        (lambda m: m.forget(-3), "not a memory id"),
        (lambda m: m.history(987), "987"),
        (lambda m: m.history("#12"), "not a memory id"),
        (lambda m: m.forget(True), "not a memory id"),
    ],
)
def test_bad_input_gets_one_line_errors(memory: lore.Memory, call: object, message: str) -> None:
    with pytest.raises((InvalidInputError, NotFoundError), match=message) as refused:
        call(memory)  # type: ignore[operator]
    assert "\n" not in str(refused.value)


def test_reminders_of_a_scope(memory: lore.Memory) -> None:
    from lore.reminders import create_reminder

    runtime = memory.runtime
    create_reminder(
        runtime.reminders,
        scope="api:alice",
        author="alice",
        text="позвонить маме",
        when="tomorrow 9am",
        recurrence=None,
        now=runtime.clock.now(),
        zone=runtime.zone,
        channel="api",
    )
    [reminder] = memory.reminders("api:alice")
    assert reminder.text == "позвонить маме" and "позвонить маме" in reminder.description
    assert memory.reminders("api:bob") == []


async def test_async_memory_block_is_the_block_the_turn_injects(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    async with lore.AsyncMemory(config=config, provider=model, clock=clock) as memory:
        noted = await memory.remember("John lives in Hualien", kind="profile")
        block = await memory.block()
        assert block.shown == (noted.id,) and block.hidden == 0
        conversation = memory.runtime.conversation(memory.scope, emit=lambda event: None)
        model.reply("You live in Hualien.")
        await conversation.send("where do I live?")
        assert block.text in model.requests[-1].system
        hits = await memory.search("Hualien")  # the turn's messages are found too
        assert [h.id for h in hits if h.kind == "memory"] == [noted.id]


class _ThreadNoting(HashEmbedder):
    """The hash embedder, noting which threads it embeds on."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def embed_passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.threads.add(threading.get_ident())
        return super().embed_passages(texts)


async def test_async_memory_embeds_and_searches_off_the_event_loop(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    embedder = _ThreadNoting()
    async with lore.AsyncMemory(
        config=config, provider=model, clock=clock, embedder=embedder
    ) as memory:
        await memory.remember("Мама любит розы")
        assert [h.text for h in await memory.search("розы")] == ["Мама любит розы"]
    assert embedder.threads and threading.get_ident() not in embedder.threads


async def test_memory_inside_async_code_says_to_use_async_memory(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    memory = lore.Memory(config=config, provider=model, clock=clock)
    with pytest.raises(InvalidInputError, match="AsyncMemory"):
        memory.remember("John lives in Hualien")
    await memory.runtime.aclose()


def test_a_memory_needs_one_home_or_one_config(config: Config) -> None:
    with pytest.raises(InvalidInputError, match="not both"):
        lore.Memory(home="/tmp/x", config=config)


@pytest.mark.postgres
def test_a_memory_over_a_database_url(home: Path, clock: FixedClock) -> None:
    from tests.postgres_server import PostgresUnavailable, empty_lore_database

    try:
        url = empty_lore_database()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    with lore.Memory(home=home, database_url=url, clock=clock) as memory:
        assert memory.runtime.postgres is not None
        noted = memory.remember("约翰住在花莲", scope="api:alice")
        assert memory.add("Иван живёт в Казани", scope="api:alice").memories[0].id > noted.id
        assert [h.id for h in memory.search("花莲", scope="api:alice")] == [noted.id]
        assert memory.forget(phrase="花莲", scope="api:alice").erased == (noted.id,)
        assert memory.search("花莲", scope="api:alice") == []
        assert memory.block("api:alice").shown == (noted.id + 1,)
