"""Consolidation and the turn's history window use one budget (system prompt, tool
definitions, reply room): consolidation folds old turns before the window would have to
drop any, so no request ever goes out with a truncated history."""

from __future__ import annotations

import pytest

from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.llm.tokens import TokenCounter
from lore.llm.tokens import _encoding as tokens
from lore.memory.consolidation import CONSOLIDATION_PROMPT
from lore.memory.flush import FLUSH_PROMPT
from lore.runtime import Runtime

KEY = "cli:default"


@pytest.mark.parametrize("counted_as", ["scripted", "openai/gpt-4o-mini"])
async def test_no_turn_sends_a_truncated_window_while_consolidation_could_fold(
    lore: Runtime, model: ScriptedProvider, counted_as: str
) -> None:
    """Also when the tokenizer starts unloaded, and the first turns count by an upper
    bound until the history comes near the budget."""
    tokens.cache_clear()
    lore.tokens = TokenCounter(counted_as)
    model.context_window = 6000
    truncated: list[int] = []

    def answer(request: ChatRequest) -> Step | str:
        if request.system == CONSOLIDATION_PROMPT:
            return "Summary of the earlier turns."
        if request.system == FLUSH_PROMPT:
            return "NONE"
        session = lore.session(KEY)
        oldest = session.messages[session.meta.last_consolidated]
        if request.messages[0].get("content") != oldest.get("content"):
            truncated.append(len(session.messages) // 2 + 1)  # the window dropped turns
        return "noted, " + "and so on " * 30

    model.default = answer
    conversation = lore.conversation(KEY, emit=lambda event: None)
    for turn in range(24):
        await conversation.send(f"turn {turn}: " + "a detail worth keeping " * 25)
        await lore.background.drain()
    assert lore.session(KEY).meta.last_consolidated > 0  # it did consolidate
    assert truncated == []  # and always before the window had to drop a turn
    assert lore.tokens.loaded  # near the budget, counted exactly
