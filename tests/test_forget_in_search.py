"""Forgotten stays forgotten in search: after the model (or a person) forgets a memory, no
search hit restates it, neither the memory nor the turn it came from, the call that wrote
it, the turn that asked to forget it, nor a note line quoting it; an index rebuild leaves
them out again. The transcript keeps what was said."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from lore.cli import main
from lore.events import Inbound
from lore.llm.base import ToolCall
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime
from lore.search import searcher
from lore.search.rebuild import rebuild
from tests.postgres_server import storage  # noqa: F401

KEY = "cli:default"


@dataclass(frozen=True)
class Case:
    said: str
    fact: str
    word: str  # what must not come back
    asked: str  # the request to forget
    query: str
    other: str  # a later turn that stays findable


CASES = [
    Case(
        "remember that I love jazz",
        "User loves jazz music",
        "jazz",
        "forget the jazz",
        "what music do I like",
        "I walk the dog every morning",
    ),
    Case(
        "记住我喜欢爵士乐",
        "用户喜欢爵士乐",
        "爵士",
        "忘掉爵士乐那条",
        "我喜欢什么音乐",
        "我每天早上遛狗",
    ),
    Case(
        "запомни, что я люблю джаз",
        "Пользователь любит джаз",
        "джаз",
        "забудь про джаз",
        "какую музыку я люблю",
        "я гуляю с собакой каждое утро",
    ),
]


async def _say(lore: Runtime, text: str) -> None:
    await lore.bus.send(Inbound(KEY, "cli", "anna", text))
    await lore.background.drain()


async def _remember_then_forget(lore: Runtime, model: ScriptedProvider, case: Case) -> int:
    model.tool_call("remember", {"content": case.fact, "keywords": [case.word]})
    model.reply(f"Noted: {case.fact}.")
    await _say(lore, case.said)
    memory_id = lore.memory.active(KEY, now=lore.clock.now())[0].id
    model.tool_call("forget", {"id": memory_id})
    model.reply(f"Done, I forgot that {case.fact}.")
    await _say(lore, case.asked)
    model.reply("Nice.")
    await _say(lore, case.other)
    return memory_id


def _found(lore: Runtime, query: str) -> list[str]:
    return [hit.entry.display for hit in searcher(lore).search(query, KEY, embed_first=256)]


@pytest.mark.parametrize("case", CASES, ids=["en", "zh", "ru"])
async def test_a_memory_the_model_forgot_is_not_restated_by_any_search(
    lore: Runtime, model: ScriptedProvider, case: Case
) -> None:
    await _remember_then_forget(lore, model, case)

    for query in (case.query, case.word, case.said, case.fact):
        hits = _found(lore, query)
        assert not [h for h in hits if case.word in h.casefold()], (query, hits)
    assert any(case.other in h for h in _found(lore, case.other))
    model.tool_call("memory_search", {"query": case.query})
    model.reply("Nothing.")
    await _say(lore, "what do you know?")
    result = model.requests[-1].messages[-1]
    assert result.get("role") == "tool" and case.word not in str(result.get("content")).casefold()


@pytest.mark.parametrize("case", CASES, ids=["en", "zh", "ru"])
async def test_the_transcript_keeps_what_was_said_after_forget(
    lore: Runtime, model: ScriptedProvider, case: Case
) -> None:
    await _remember_then_forget(lore, model, case)

    said = [m.get("content") for m in lore.session(KEY).messages]
    assert case.said in said and case.asked in said
    forgot = [m for m in lore.session(KEY).messages if m.get("role") == "tool"][1]
    assert "forget everywhere` erases that too" in str(forgot.get("content"))


async def test_an_index_rebuild_does_not_bring_a_forgotten_turn_back(
    lore: Runtime, model: ScriptedProvider
) -> None:
    case = CASES[0]
    await _remember_then_forget(lore, model, case)

    rebuild(lore, vectors=True)
    assert not [h for h in _found(lore, "jazz") if "jazz" in h.casefold()]
    assert any(case.other in h for h in _found(lore, "dog morning"))


def _cli_hits(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["memory", "search", *args, "--json"]) == 0
    return capsys.readouterr().out


async def test_lore_memory_search_finds_nothing_of_a_memory_and_note_line_forgotten_from_the_cli(
    lore: Runtime, model: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    if lore.config.database_url:
        pytest.skip("the command line opens the home's own config, on SQLite here")
    model.tool_call("remember", {"content": "User loves jazz music"})
    model.reply("Noted.")
    await _say(lore, "remember that I love jazz")
    memory_id = lore.memory.active(KEY, now=lore.clock.now())[0].id
    note = lore.config.workspace / "memory" / "2026-11-30.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# 2026-11-30\n\n- user loves jazz music\n- Anna walks the dog\n")
    assert "jazz" in _cli_hits(capsys, "what music do I like")
    await lore.aclose()

    assert main(["memory", "forget", str(memory_id)]) == 0
    assert "forget everywhere` erases that too" in capsys.readouterr().out
    assert "jazz" not in _cli_hits(capsys, "what music do I like")
    assert "jazz" not in _cli_hits(capsys, "jazz")
    assert "dog" in _cli_hits(capsys, "dog")
    assert main(["index", "rebuild"]) == 0
    assert "jazz" not in _cli_hits(capsys, "jazz")


async def test_the_forget_tool_says_the_transcript_keeps_what_was_said(lore: Runtime) -> None:
    from lore.core.tools import ToolContext

    memory, _ = lore.memory.remember(
        KEY, "User loves jazz music", author="anna", via="cli", now=lore.clock.now()
    )
    ctx = ToolContext(KEY, "anna", "s", 0, lore.clock.now(), "UTC")
    ctx.shown_memory_ids.add(memory.id)
    result = await lore.tools.call(ToolCall("c", "forget", json.dumps({"id": memory.id})), ctx)
    assert "What you said stays in the conversation's transcript" in result.content


SUPERSEDED = [
    ("I live in Hualien", "User lives in Hualien", "User lives in Taipei", "Hualien"),
    ("我住在花莲", "用户住在花莲", "用户住在台北", "花莲"),
    ("я живу в Хуаляне", "Пользователь живёт в Хуаляне", "Пользователь живёт в Тайбэе", "Хуаляне"),
]


@pytest.mark.parametrize("said,old,new,word", SUPERSEDED, ids=["en", "zh", "ru"])
async def test_a_transcript_hit_stating_a_superseded_value_ranks_below_it_and_says_so(
    lore: Runtime, said: str, old: str, new: str, word: str
) -> None:
    from lore.ports.memories import Source
    from lore.search import format_hits

    session = lore.session(KEY)
    session.append([{"role": "user", "content": said}, {"role": "assistant", "content": "OK."}])
    first, _ = lore.memory.remember(
        KEY, old, author="anna", via="tool", now=lore.clock.now(),
        source=Source(session.meta.session_id, 0),
    )  # fmt: skip
    current = lore.memory.supersede(
        KEY, first.id, new, author="anna", via="tool", now=lore.clock.now()
    )
    search = searcher(lore)
    search.index_live(KEY)

    hits = search.search(f"{word} {new}", KEY, mode="text")
    kinds = [(h.entry.kind, h.entry.locator, h.superseded_by) for h in hits]
    assert ("message", 0, current.id) in kinds, kinds
    assert kinds.index(("memory", current.id, None)) < kinds.index(("message", 0, current.id))
    shown = format_hits(hits, word, lore.zone)
    assert f"(superseded by #{current.id})" in shown
    assert (
        hits[[h.entry.kind for h in hits].index("message")].to_dict()["superseded_by"] == current.id
    )


async def test_lore_memory_forget_all_leaves_nothing_for_search_to_restate(
    lore: Runtime, model: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    if lore.config.database_url:
        pytest.skip("the command line opens the home's own config, on SQLite here")
    for case in CASES:
        model.tool_call("remember", {"content": case.fact})
        model.reply("Noted.")
        await _say(lore, case.said)
    assert "jazz" in _cli_hits(capsys, "jazz")
    await lore.aclose()

    assert main(["memory", "forget", "--all"]) == 0
    for case in CASES:
        assert case.word not in _cli_hits(capsys, case.word).casefold()


def test_a_forget_during_the_indexing_of_its_turn_is_not_undone_by_it(lore: Runtime) -> None:
    """The after-turn indexing runs in a thread beside extraction: an indexing that read the
    hidden turns just before a forget must not put back the turn the forget dropped."""
    import threading

    from lore.core.forgetting import forget_memory
    from lore.ports.memories import Source

    session = lore.session(KEY)
    session.append(
        [{"role": "user", "content": "I love jazz"}, {"role": "assistant", "content": "OK."}]
    )
    memory, _ = lore.memory.remember(
        KEY, "Anna loves jazz music", author="anna", via="extraction", now=lore.clock.now(),
        source=Source(session.meta.session_id, 0),
    )  # fmt: skip
    index = searcher(lore).index
    read, go = threading.Event(), threading.Event()
    hidden = index.hidden

    def slow_hidden(kind: str) -> dict[str, frozenset[str]]:
        marks = hidden(kind)
        if threading.current_thread().name == "indexing":
            read.set()
            go.wait(5)
        return marks

    index.hidden = slow_hidden  # type: ignore[method-assign]
    indexing = threading.Thread(target=searcher(lore).index_live, args=(KEY,), name="indexing")
    indexing.start()
    assert read.wait(5)
    forgetting = threading.Thread(
        target=forget_memory,
        args=(lore, KEY, memory.id),
        kwargs={"by": "anna", "via": "extraction", "now": lore.clock.now()},
    )
    forgetting.start()
    forgetting.join(0.5)  # without the indexing lock the forget finishes here
    go.set()
    indexing.join(5)
    forgetting.join(5)
    assert not [h for h in _found(lore, "jazz") if "jazz" in h.casefold()]
