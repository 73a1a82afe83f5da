"""Each person's data in their own hands, in a family group: "what do you know about me?"
lists what they noted and what names them, with #ids; "forget everything I told you"
forgets what they noted there after their own yes, never someone else's; and nothing of
another conversation is ever read or changed."""

from __future__ import annotations

import json

import pytest

from lore.clock import FixedClock
from lore.core.confirmation import is_no, is_yes
from lore.events import Inbound
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime

FAMILY = "line:group:Cfamily"
CLIMBING = "line:group:Cclimbing"


def _note(lore: Runtime, scope: str, text: str, author: str) -> int:
    memory, _ = lore.memory.remember(scope, text, author=author, via="tool", now=lore.clock.now())
    return memory.id


def _say(lore: Runtime, scope: str, author: str, text: str, *, respond: bool = True) -> Inbound:
    return Inbound(scope, "line", author, text, trust="member", respond=respond)


def _active(lore: Runtime, scope: str) -> list[str]:
    return [m.content for m in lore.memory.active(scope, now=lore.clock.now())]


def _tool_results(model: ScriptedProvider) -> list[str]:
    return [str(m["content"]) for m in model.requests[-1].messages if m.get("role") == "tool"]


@pytest.fixture
def family(lore: Runtime) -> dict[str, int]:
    return {
        "jazz": _note(lore, FAMILY, "Anna loves jazz", "Anna"),
        "tea": _note(lore, FAMILY, "Anna drinks green tea every morning", "Anna"),
        "husband": _note(lore, FAMILY, "Муж Анны — Олег", "Bob"),
        "bob": _note(lore, FAMILY, "Bob works nights", "Bob"),
        "brother": _note(lore, FAMILY, "Bob is Anna's brother", "Bob"),
        "xiaoming": _note(lore, FAMILY, "小明喜欢猫", "Bob"),
        "elsewhere": _note(lore, CLIMBING, "Anna climbs on Sundays", "Anna"),
    }


@pytest.mark.parametrize(
    "question", ["What do you know about me?", "你记得我什么？", "Что ты обо мне знаешь?"]
)
async def test_my_memories_lists_what_the_speaker_noted_and_what_names_them_with_ids(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int], question: str
) -> None:
    model.tool_call("my_memories", {}).reply("Here is what I know.")
    await lore.bus.send(_say(lore, FAMILY, "Anna", question))
    (listing,) = _tool_results(model)
    assert f"#{family['jazz']} [fact] Anna loves jazz" in listing
    assert f"#{family['tea']} " in listing
    assert f"#{family['brother']} [fact] Bob is Anna's brother (noted by Bob)" in listing
    assert "Bob works nights" not in listing
    assert "climbs" not in listing  # another conversation's memory, by the same name


async def test_my_memories_finds_a_chinese_name_inside_a_sentence(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int]
) -> None:
    model.tool_call("my_memories", {}).reply("ok")
    await lore.bus.send(_say(lore, FAMILY, "小明", "你知道我什么？"))
    (listing,) = _tool_results(model)
    assert f"#{family['xiaoming']} [fact] 小明喜欢猫" in listing
    assert "jazz" not in listing


async def test_my_memories_finds_a_russian_name_in_any_case(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int]
) -> None:
    model.tool_call("my_memories", {}).reply("ok")
    await lore.bus.send(_say(lore, FAMILY, "Анна", "Что ты обо мне знаешь?"))
    (listing,) = _tool_results(model)
    assert f"#{family['husband']} [fact] Муж Анны — Олег (noted by Bob)" in listing
    assert "jazz" not in listing


async def test_the_mine_command_lists_the_same_without_the_model(
    lore: Runtime, family: dict[str, int]
) -> None:
    outcome = await lore.bus.send(_say(lore, FAMILY, "Bob", "/mine"))
    assert f"#{family['bob']} [fact] Bob works nights" in outcome.text
    assert f"#{family['husband']} " in outcome.text  # Bob noted it, though it is about Anna
    assert "jazz" not in outcome.text


@pytest.mark.parametrize(
    ("ask", "yes"),
    [
        ("Forget everything I told you", "yes"),
        ("忘掉我跟你说过的一切", "是的"),
        ("Забудь всё, что я тебе говорила", "Да, удали"),
    ],
)
async def test_forget_my_memories_forgets_what_the_speaker_noted_here_after_their_yes(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int], ask: str, yes: str
) -> None:
    model.tool_call("forget_my_memories", {}).reply("Please confirm.")
    await lore.bus.send(_say(lore, FAMILY, "Anna", ask))
    (question,) = _tool_results(model)
    assert f"#{family['jazz']} Anna loves jazz" in question and "reply yes" in question
    assert "Anna loves jazz" in _active(lore, FAMILY)  # nothing forgotten before the yes

    answered = await lore.bus.send(_say(lore, FAMILY, "Anna", yes))

    assert answered.command is not None and "Forgot 2 memories of Anna's" in answered.text
    assert sorted(_active(lore, FAMILY)) == sorted(
        ["小明喜欢猫", "Bob is Anna's brother", "Bob works nights", "Муж Анны — Олег"]
    )
    assert _active(lore, CLIMBING) == ["Anna climbs on Sundays"]  # another conversation


async def test_a_yes_from_another_group_member_forgets_nothing(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int]
) -> None:
    asked = await lore.bus.send(_say(lore, FAMILY, "Anna", "/forget-mine"))
    assert "Anna: reply yes" in asked.text and "only Anna can answer" in asked.text
    model.reply("Bob, Anna has to answer that herself.")

    for other in ("yes", "是的", "да"):
        outcome = await lore.bus.send(_say(lore, FAMILY, "Bob", other))
        assert outcome.command is None  # an ordinary message of Bob's, not an answer
        model.reply("ok")
    assert "Anna loves jazz" in _active(lore, FAMILY)

    answered = await lore.bus.send(_say(lore, FAMILY, "Anna", "yes"))
    assert "Forgot 2 memories" in answered.text
    assert "Anna loves jazz" not in _active(lore, FAMILY)


async def test_the_answer_counts_in_a_group_even_when_not_addressed_to_lore(
    lore: Runtime, family: dict[str, int]
) -> None:
    await lore.bus.send(_say(lore, FAMILY, "Anna", "/forget-mine"))
    answered = await lore.bus.send(_say(lore, FAMILY, "Anna", "yes", respond=False))
    assert "Forgot 2 memories" in answered.text


@pytest.mark.parametrize("no", ["no", "不要", "нет"])
async def test_a_no_keeps_everything(lore: Runtime, family: dict[str, int], no: str) -> None:
    await lore.bus.send(_say(lore, FAMILY, "Anna", "/forget-mine"))
    answered = await lore.bus.send(_say(lore, FAMILY, "Anna", no))
    assert "nothing forgotten" in answered.text
    assert "Anna loves jazz" in _active(lore, FAMILY)
    again = await lore.bus.send(_say(lore, FAMILY, "Anna", "/mine"))
    assert "Anna loves jazz" in again.text  # the question is over: a later yes is a message


async def test_any_other_message_drops_the_question_and_is_answered_as_usual(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int]
) -> None:
    await lore.bus.send(_say(lore, FAMILY, "Anna", "/forget-mine"))
    model.reply("Jazz it is.")
    outcome = await lore.bus.send(_say(lore, FAMILY, "Anna", "play something for me"))
    assert outcome.text == "Jazz it is."
    model.reply("Yes to what?")
    later = await lore.bus.send(_say(lore, FAMILY, "Anna", "yes"))
    assert later.command is None and "Anna loves jazz" in _active(lore, FAMILY)


async def test_a_question_not_answered_in_time_forgets_nothing(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock, family: dict[str, int]
) -> None:
    await lore.bus.send(_say(lore, FAMILY, "Anna", "/forget-mine"))
    clock.advance(seconds=lore.config.tools.approval_timeout + 1)
    model.reply("Yes?")
    late = await lore.bus.send(_say(lore, FAMILY, "Anna", "yes"))
    assert late.command is None and "Anna loves jazz" in _active(lore, FAMILY)


async def test_the_question_in_one_conversation_is_not_answered_from_another(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int]
) -> None:
    await lore.bus.send(_say(lore, FAMILY, "Anna", "/forget-mine"))
    model.reply("Yes to what?")
    elsewhere = await lore.bus.send(_say(lore, CLIMBING, "Anna", "yes"))
    assert elsewhere.command is None
    assert _active(lore, CLIMBING) == ["Anna climbs on Sundays"]
    assert "Anna loves jazz" in _active(lore, FAMILY)


async def test_someone_who_noted_nothing_is_told_so_and_asked_nothing(
    lore: Runtime, model: ScriptedProvider, family: dict[str, int]
) -> None:
    outcome = await lore.bus.send(_say(lore, FAMILY, "Zoe", "/forget-mine"))
    assert "Zoe has noted nothing" in outcome.text
    model.reply("ok")
    assert (await lore.bus.send(_say(lore, FAMILY, "Zoe", "yes"))).command is None


def test_yes_and_no_are_read_in_three_languages() -> None:
    assert all(is_yes(t) for t in ("yes", "Yes please", "是的", "好。", "да", "Да, удали"))
    assert all(is_no(t) for t in ("no", "No thanks", "不要", "取消", "нет", "Не надо"))
    assert not any(is_yes(t) for t in ("yes I told you about my trip last week and more", ""))
    assert not is_yes("no") and not is_no("yes")


async def test_the_tools_take_no_name_so_nobody_asks_for_someone_else(lore: Runtime) -> None:
    specs = {spec.name: spec for spec in lore.tools.specs()}
    for name in ("my_memories", "forget_my_memories"):
        assert json.loads(json.dumps(specs[name].parameters))["properties"] == {}
