"""Memories from imported conversations, by the model, with consent: nothing is sent
before the owner agrees; the estimate says what would be; each exchange goes through live
extraction dated when it was said, newest conversation first, so an old fact never
overrides a newer one; the job pauses, resumes where it stopped, and links each memory
to the imported message it came from."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lore.cli import main
from lore.clock import FixedClock
from lore.config import load_config
from lore.errors import InvalidInputError
from lore.import_extraction import estimate, extract_import, pause, queue
from lore.import_job import import_ledger, run_import
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.runtime import Runtime, build

CHATGPT = Path(__file__).parent / "fixtures" / "import" / "chatgpt-conversations.json"
MEM0 = Path(__file__).parent / "fixtures" / "import" / "mem0-memories.json"


@pytest.fixture
async def lore(home: Path, model: ScriptedProvider, clock: FixedClock) -> AsyncIterator[Runtime]:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "UTC"},
    )
    runtime = build(config, provider=model, clock=clock)
    yield runtime
    await runtime.aclose()


class Extraction:
    """The scripted model's extraction replies, by what the user said in the exchange."""

    def __init__(self, model: ScriptedProvider) -> None:
        self.asked: list[str] = []
        self.replies: dict[str, list[dict[str, object]]] = {}
        model.default = self._answer

    def _answer(self, request: ChatRequest) -> Step:
        assert request.system == EXTRACTION_PROMPT, "only extraction may be asked"
        said = str(request.messages[0]["content"])
        user = said.split("<user>\n", 1)[1].split("\n</user>", 1)[0]
        self.asked.append(user)
        return Step(text=json.dumps(self.replies.get(user, []), ensure_ascii=False))


def _imported(lore: Runtime) -> str:
    done = run_import(lore, "chatgpt", CHATGPT, scope="cli:default")
    assert done.record is not None
    return done.record.id


async def test_nothing_is_sent_before_the_owner_agrees_and_the_estimate_says_what_would_be(
    lore: Runtime, model: ScriptedProvider
) -> None:
    asked = Extraction(model)
    import_id = _imported(lore)
    guess = estimate(lore, import_ledger(lore).get(import_id))
    assert (guess.conversations, guess.exchanges) == (3, 5)
    assert guess.tokens > 5 * 900
    with pytest.raises(InvalidInputError, match="not agreed to"):
        await extract_import(lore, import_id)
    assert asked.asked == [] and model.requests == []


async def test_each_exchange_is_extracted_dated_newest_conversation_first_and_linked(
    lore: Runtime, model: ScriptedProvider
) -> None:
    asked = Extraction(model)
    asked.replies["A Taiwanese passport, staying 10 days."] = [
        {"op": "add", "content": "John has a Taiwanese passport", "kind": "profile"}
    ]
    asked.replies["这张照片是哪里？"] = []
    import_id = _imported(lore)
    queue(lore, import_id)
    done = await extract_import(lore, import_id)
    assert done.extraction["state"] == "done" and done.extraction["notes"] == 1
    # Newest conversation first (November, June, March); in order within each.
    assert [a[:12] for a in asked.asked] == [
        "Напомни, как",
        "我下个月要去花莲，有什么",
        "这张照片是哪里？",
        "Do I need a ",
        "A Taiwanese ",
    ]
    (memory,) = lore.memory.active("cli:default", now=lore.clock.now())
    assert memory.content == "John has a Taiwanese passport"
    assert memory.created_at.isoformat().startswith("2024-03-01")  # when it was said
    assert memory.source is not None and memory.source.message_index == 2
    visa = next(i for i in done.sessions if i["title"] == "Visa for the Japan trip")
    assert memory.source.session_id == visa["session_id"]
    # Agreeing again once done sends nothing more.
    before = len(asked.asked)
    queue(lore, import_id)
    assert import_ledger(lore).get(import_id).extraction["state"] == "done"
    assert len(asked.asked) == before


async def test_an_old_exchange_never_corrects_a_memory_changed_after_it(
    lore: Runtime, model: ScriptedProvider
) -> None:
    asked = Extraction(model)
    now = lore.clock.now()
    newer, _ = lore.memory.remember(
        "cli:default", "John has a German passport", author="john", via="cli", now=now
    )
    asked.replies["A Taiwanese passport, staying 10 days."] = [
        {"op": "update", "id": newer.id, "content": "John has a Taiwanese passport"},
        {"op": "delete", "id": newer.id},
    ]
    import_id = _imported(lore)
    queue(lore, import_id)
    await extract_import(lore, import_id)
    (kept,) = lore.memory.active("cli:default", now=lore.clock.now())
    assert kept.id == newer.id and kept.content == "John has a German passport"


async def test_a_paused_job_goes_on_where_it_stopped_without_asking_twice(
    lore: Runtime, model: ScriptedProvider
) -> None:
    asked = Extraction(model)
    import_id = _imported(lore)
    queue(lore, import_id)

    def pause_after_the_first(done: int, total: int) -> None:
        if done == 1:
            pause(lore, import_id)

    done = await extract_import(lore, import_id, progress=pause_after_the_first)
    assert done.extraction["state"] == "paused" and len(done.extraction["done"]) == 1
    first = list(asked.asked)
    with pytest.raises(InvalidInputError, match="extraction is paused"):
        await extract_import(lore, import_id)
    queue(lore, import_id)
    finished = await extract_import(lore, import_id)
    assert finished.extraction["state"] == "done" and len(finished.extraction["done"]) == 3
    assert len(asked.asked) == 5 and set(first) <= set(asked.asked)
    assert len(set(asked.asked)) == 5  # no exchange asked twice


async def test_facts_another_agent_kept_are_not_sent_again(
    lore: Runtime, model: ScriptedProvider
) -> None:
    done = run_import(lore, "mem0", MEM0, scope="cli:default")
    assert done.record is not None
    assert estimate(lore, done.record).exchanges == 0


def test_an_import_on_no_terminal_says_what_extraction_would_send_and_sends_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LORE_HOME", str(home))
    monkeypatch.setenv("LORE_MODEL", "scripted")
    capsys.readouterr()
    assert main(["import", "chatgpt", str(CHATGPT)]) == 0
    out = capsys.readouterr().out
    assert "Extracting memories sends your side of 3 conversations (5 exchanges, about" in out
    assert "to scripted" in out and "Not sent. To agree: lore import extract " in out
    assert main(["import", "undo", out.split("Import ", 1)[1][:12]]) == 0
    capsys.readouterr()
    assert main(["import", "chatgpt", str(CHATGPT), "--no-extract"]) == 0
    assert "Extracting" not in capsys.readouterr().out
    record = import_ledger(build(load_config(env={"LORE_HOME": str(home)}))).records()[-1]
    assert record.extraction == {}
