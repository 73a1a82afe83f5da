"""Conversation fixtures for automatic extraction, in English, Chinese and Russian.

Each fixture (tests/fixtures/extraction/*.json) holds the turns, the chat model's reply
and the extraction model's reply for each, and the store expected afterwards:
    {"name", "language",
     "turns": [{"user", "reply", "extraction": [ops] | "raw reply text"}],
     "expect": {"active": [exact contents], "contains": [substrings], "absent": [substrings]}}
With the scripted provider the store must match exactly. With LORE_EVAL_MODEL set (e.g.
openai/gpt-4o-mini, keys from the environment), the same fixtures judge the real prompt:
the chat replies stay scripted, the extraction comes from the real model, and the check
is by count, required and forbidden substrings.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.base import ChatRequest, Provider
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.runtime import build
from tests.conftest import ORIGINAL_ENV

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "extraction").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _scripted(fixture: dict[str, Any]) -> ScriptedProvider:
    """One provider for both calls: chat replies and extraction replies, told apart."""
    chat = [turn["reply"] for turn in fixture["turns"]]
    extraction = [turn["extraction"] for turn in fixture["turns"]]
    model = ScriptedProvider()

    def answer(request: ChatRequest) -> Step:
        if request.system == EXTRACTION_PROMPT:
            reply = extraction.pop(0)
            return Step(
                text=reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
            )
        return Step(text=chat.pop(0))

    model.default = answer
    return model


async def _run(config: Config, chat: Provider, fixture: dict[str, Any]) -> list[str]:
    lore = build(config, provider=chat, clock=FixedClock(datetime(2026, 11, 30, 9, tzinfo=UTC)))
    conversation = lore.conversation("cli:default", emit=lambda event: None)
    for turn in fixture["turns"]:
        result = (await conversation.send(turn["user"])).result
        assert result is not None
        await lore.background.drain()  # deterministic: each turn's notes before the next
    contents = [m.content for m in lore.memory.active("cli:default", now=lore.clock.now())]
    await lore.aclose()
    return contents


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
async def test_fixture_with_scripted_model(path: Path, home: Path) -> None:
    fixture = _load(path)
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei"},
    )
    active = await _run(config, _scripted(fixture), fixture)
    expect = fixture["expect"]
    assert sorted(active) == sorted(expect["active"])
    _check_substrings(active, expect)


@pytest.mark.real_provider
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
async def test_fixture_with_real_model(path: Path, home: Path) -> None:
    model_name = ORIGINAL_ENV.get("LORE_EVAL_MODEL")
    if not model_name:
        pytest.skip("set LORE_EVAL_MODEL=openai/… (and its API key) to judge the prompt")
    fixture = _load(path)
    env = {**ORIGINAL_ENV, "LORE_HOME": str(home)}
    config = load_config(env=env, flags={"model": "scripted", "extraction.model": model_name})
    chat = ScriptedProvider()
    for turn in fixture["turns"]:
        chat.reply(turn["reply"])
    active = await _run(config, chat, fixture)
    expect = fixture["expect"]
    assert len(active) == len(expect["active"]), active
    _check_substrings(active, expect)


def _check_substrings(active: list[str], expect: dict[str, Any]) -> None:
    text = "\n".join(active)
    for needed in expect["contains"]:
        assert needed in text, f"{needed!r} missing from {active}"
    for banned in expect["absent"]:
        assert banned not in text, f"{banned!r} should not be noted: {active}"
