"""The model's remember/forget tools and the /memory, /remember, /forget commands.

Tools are called through the runtime's registry exactly as the tool loop calls them; the
block is rendered as the context builder renders it for the next turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lore.core.tools import ToolContext, ToolResult
from lore.llm.base import ToolCall
from lore.memory.block import MemoryBlock, render_memory_block
from lore.runtime import Runtime
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

HOME = "cli:default"


def context(lore: Runtime, scope: str = HOME, author: str = "John") -> ToolContext:
    """The context a turn gives its tools, with this turn's block already shown."""
    ctx = ToolContext(
        scope=scope,
        author=author,
        session_id="s-1",
        message_index=6,
        now=lore.clock.now(),
        timezone="Asia/Taipei",
    )
    ctx.shown_memory_ids.update(next_block(lore, scope).shown_ids)
    return ctx


def next_block(lore: Runtime, scope: str = HOME) -> MemoryBlock:
    return render_memory_block(
        lore.memory,
        scope,
        budget_chars=lore.config.memory.budget_chars,
        now=lore.clock.now(),
        zone=lore.zone,
    )


async def call(lore: Runtime, ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return await lore.tools.call(ToolCall("call-1", name, json.dumps(args)), ctx)


def test_the_tools_are_remember_and_forget_with_their_contract(lore: Runtime) -> None:
    specs = {spec.name: spec for spec in lore.tools.specs()}
    remember, forget = specs["remember"], specs["forget"]
    assert set(remember.parameters["properties"]) == {"content", "kind", "keywords"}
    assert remember.parameters["required"] == ["content"]
    assert forget.parameters["required"] == ["id"]


def test_the_descriptions_fence_memories_from_reminders_and_corrections() -> None:
    from lore.memory.tools import ForgetTool, RememberTool

    assert "set_reminder" in RememberTool.description
    assert "remind me in 10 minutes" in RememberTool.description
    assert "forget with the old #id first" in RememberTool.description
    assert "Never guess an id" in ForgetTool.description


async def test_a_remembered_fact_is_in_the_next_block_with_its_id(lore: Runtime) -> None:
    ctx = context(lore)
    result = await call(lore, ctx, "remember", content="John lives in Hualien", kind="profile")
    assert not result.is_error
    (memory,) = lore.memory.active(HOME, now=lore.clock.now())
    assert result.content == f"Remembered as #{memory.id}."
    assert f"#{memory.id} [profile] John lives in Hualien (noted by John," in next_block(lore).text
    assert memory.source is not None and memory.source.message_index == 6


async def test_remember_tells_the_user_and_allows_a_correction_in_the_same_turn(
    lore: Runtime,
) -> None:
    ctx = context(lore)
    await call(lore, ctx, "remember", content="John lives in Taipei")
    (memory,) = lore.memory.active(HOME, now=lore.clock.now())
    assert ctx.notices == [f"noted #{memory.id} John lives in Taipei"]
    assert memory.id in ctx.shown_memory_ids
    assert not (await call(lore, ctx, "forget", id=memory.id)).is_error
    assert ctx.notices[-1] == f"forgot #{memory.id}"


async def test_forget_removes_it_from_the_next_block_the_list_and_search(lore: Runtime) -> None:
    memory, _ = lore.memory.remember(
        HOME, "我每天早上喝美式咖啡", author="John", via="tool", now=lore.clock.now()
    )
    ctx = context(lore)
    result = await call(lore, ctx, "forget", id=memory.id)
    assert (result.is_error, result.content) == (
        False,
        f"Forgot #{memory.id}; it is erased from memory and search and will not appear "
        "again. What you said stays in the conversation's transcript; `forget everywhere` "
        "erases that too.",
    )
    assert f"#{memory.id}" not in next_block(lore).text
    assert lore.memory.active(HOME, now=lore.clock.now()) == []
    assert lore.memory.search(HOME, "咖啡", now=lore.clock.now()) == []


@pytest.mark.parametrize("spelled", ["#{id}", "{id}"])
async def test_forget_accepts_the_id_as_written_in_the_block(lore: Runtime, spelled: str) -> None:
    memory, _ = lore.memory.remember(HOME, "x", author="John", via="tool", now=lore.clock.now())
    result = await call(lore, context(lore), "forget", id=spelled.format(id=memory.id))
    assert not result.is_error


async def test_forget_of_an_id_not_in_the_block_changes_nothing(lore: Runtime) -> None:
    ctx = context(lore)  # the block was rendered before this memory existed
    memory, _ = lore.memory.remember(HOME, "x", author="John", via="cli", now=lore.clock.now())
    result = await call(lore, ctx, "forget", id=memory.id)
    assert result.is_error
    assert f"#{memory.id} is not in this conversation's memory block" in result.content
    assert lore.memory.get(HOME, memory.id).content == "x"
    assert ctx.notices == []


async def test_forget_of_another_scopes_memory_changes_nothing(lore: Runtime) -> None:
    theirs, _ = lore.memory.remember(
        "line:group:family", "Mom lands Thursday", author="Mary", via="tool", now=lore.clock.now()
    )
    ctx = context(lore)
    ctx.shown_memory_ids.add(theirs.id)  # even if the id somehow reached this turn
    result = await call(lore, ctx, "forget", id=theirs.id)
    assert result.is_error and "nothing was forgotten" in result.content
    assert lore.memory.get("line:group:family", theirs.id).content == "Mom lands Thursday"


@pytest.mark.parametrize("bad", [True, "twelve", -3, None, [1], "²"])
async def test_forget_with_a_malformed_id_is_a_clear_error(lore: Runtime, bad: object) -> None:
    result = await call(lore, context(lore), "forget", id=bad)
    assert result.is_error and "'id' must be a memory id" in result.content


async def test_content_over_500_characters_is_refused_with_the_reason(lore: Runtime) -> None:
    ctx = context(lore)
    result = await call(lore, ctx, "remember", content="x" * 501)
    assert result.is_error and "at most 500 characters" in result.content
    assert lore.memory.active(HOME, now=lore.clock.now()) == [] and ctx.notices == []


async def test_an_exact_duplicate_returns_the_existing_id(lore: Runtime) -> None:
    ctx = context(lore)
    await call(lore, ctx, "remember", content="I drink tea")
    again = await call(lore, ctx, "remember", content="I drink tea")
    (memory,) = lore.memory.active(HOME, now=lore.clock.now())
    assert again.content == f"Already remembered as #{memory.id}; nothing changed."
    assert len(ctx.notices) == 1


async def test_a_secret_is_refused_with_an_explanation(lore: Runtime) -> None:
    result = await call(lore, context(lore), "remember", content="my wifi password is Tr0ub4dor")
    assert result.is_error
    assert "looks like a password" in result.content and "Tr0ub4dor" not in result.content
    assert lore.memory.active(HOME, now=lore.clock.now()) == []


async def test_keywords_from_the_model_make_the_memory_findable(lore: Runtime) -> None:
    await call(
        lore,
        context(lore),
        "remember",
        content="我每天早上喝美式咖啡",
        kind="preference",
        keywords=["提神", "coffee"],
    )
    assert [m.content for m in lore.memory.search(HOME, "提神", now=lore.clock.now())] == [
        "我每天早上喝美式咖啡"
    ]


async def test_an_unknown_kind_is_refused(lore: Runtime) -> None:
    result = await call(lore, context(lore), "remember", content="x", kind="Very Important!")
    assert result.is_error and "kind must be one of" in result.content


async def test_in_a_group_anyone_can_forget_what_anyone_noted(lore: Runtime) -> None:
    group = "line:group:family"
    mary = context(lore, group, author="Mary")
    await call(lore, mary, "remember", content="Mom's flight lands Thursday 3 PM")
    (memory,) = lore.memory.active(group, now=lore.clock.now())
    assert "(noted by Mary," in next_block(lore, group).text
    assert not (
        await call(lore, context(lore, group, author="John"), "forget", id=memory.id)
    ).is_error
    assert lore.memory.history(group, memory.id)[-1].actor == "John"


# -- slash commands -------------------------------------------------------------------------


async def test_slash_remember_works_without_the_model(lore: Runtime) -> None:
    conversation = lore.conversation(HOME, emit=lambda event: None, author="John")
    reply = (await conversation.send("/remember I prefer window seats")).text
    (memory,) = lore.memory.active(HOME, now=lore.clock.now())
    assert reply == f"Noted #{memory.id}: I prefer window seats"
    assert lore.memory.history(HOME, memory.id)[0].via == "command"


async def test_slash_memory_shows_the_block_as_the_model_sees_it(lore: Runtime) -> None:
    conversation = lore.conversation(HOME, emit=lambda event: None)
    await conversation.send("/remember I prefer window seats")
    shown = (await conversation.send("/memory")).text
    assert shown.startswith(next_block(lore).text + "\n\nRecent changes:\n")
    assert "noted #1 by john (with a slash command)" in shown


async def test_slash_forget_erases_and_reports_bad_ids_plainly(lore: Runtime) -> None:
    conversation = lore.conversation(HOME, emit=lambda event: None)
    await conversation.send("/remember I prefer window seats")
    (memory,) = lore.memory.active(HOME, now=lore.clock.now())
    assert (await conversation.send("/forget 999")).text == (
        "Nothing forgotten: there is no memory #999 in this conversation"
    )
    for bad in ("abc", "²"):  # "²".isdigit() is true, yet int() refuses it
        assert (await conversation.send(f"/forget {bad}")).text == (
            "Usage: /forget ID [everywhere [yes]] (ID: the number after # in /memory)"
        )
    assert (await conversation.send(f"/forget #{memory.id}")).text == (
        f"Forgot #{memory.id}. What you said stays in the conversation's transcript; "
        "`forget everywhere` erases that too."
    )
    assert lore.memory.active(HOME, now=lore.clock.now()) == []


async def test_slash_remember_refuses_oversize_text_with_the_reason(lore: Runtime) -> None:
    conversation = lore.conversation(HOME, emit=lambda event: None)
    reply = (await conversation.send("/remember " + "x" * 501)).text
    assert reply.startswith("Not remembered: a memory is at most 500 characters")
