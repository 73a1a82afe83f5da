"""Memory through real turns: the model's remember/forget calls and the next request."""

from __future__ import annotations

from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.runtime import Runtime
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)


async def test_remember_then_forget_through_the_model(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = lore.conversation("cli:default", emit=lambda event: None)
    model.tool_call(
        "remember", {"content": "John lives in Hualien", "kind": "profile", "keywords": ["home"]}
    ).reply("Noted: Hualien.")
    await conversation.send("I live in Hualien, remember that")
    [memory] = lore.memory.active("cli:default", now=lore.clock.now())
    assert memory.content == "John lives in Hualien" and memory.author == "john"

    model.reply("You live in Hualien.")
    await conversation.send("where do I live?")
    system = model.requests[-1].system
    assert f"#{memory.id} [profile] John lives in Hualien (noted by john, 2026-11-30)" in system

    model.tool_call("forget", {"id": memory.id}).reply("Forgotten.")
    await conversation.send("forget where I live")
    model.reply("I don't know where you live.")
    await conversation.send("where do I live?")
    assert "John lives in Hualien" not in model.requests[-1].system
    assert lore.memory.active("cli:default", now=lore.clock.now()) == []
    assert lore.memory.search("cli:default", "Hualien", now=lore.clock.now()) == []


async def test_forget_of_an_id_never_shown_changes_nothing(
    lore: Runtime, model: ScriptedProvider
) -> None:
    other, _ = lore.memory.remember(
        "telegram:999",
        "Anna's PIN hint is her cat",
        author="anna",
        via="cli",
        now=lore.clock.now(),
    )
    model.tool_call("forget", {"id": other.id}).reply("Could not.")
    await lore.conversation("cli:default", emit=lambda event: None).send("forget #1")
    result = content_text(model.requests[1].messages[-1]["content"])
    assert result.startswith("Error:")
    assert lore.memory.get("telegram:999", other.id).content == "Anna's PIN hint is her cat"
