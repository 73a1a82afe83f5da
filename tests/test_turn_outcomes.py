"""A turn or command that did not do what was asked says so and exits non-zero: an empty
reply is a failure (never stored as an answer), an empty message is never sent, a failed
slash command fails `lore chat -m`, and a looping model sets one reminder, not ten."""

from __future__ import annotations

import io

import pytest

from lore.channels.terminal import run_once
from lore.cli import main
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.runtime import Runtime

HOME = "cli:default"


async def test_an_empty_final_reply_fails_the_turn_and_stores_no_answer(
    lore: Runtime, model: ScriptedProvider
) -> None:
    rounds = lore.config.max_tool_rounds
    for _ in range(rounds):
        model.tool_call("list_reminders", {})
    model.reply("")
    out, err = io.StringIO(), io.StringIO()
    assert await run_once(lore, HOME, "what is due?", out=out, err=err) == 1
    assert out.getvalue() == "" and "gave no reply" in err.getvalue()
    messages = lore.session(HOME).messages
    assert messages[0]["role"] == "user" and messages[0].get("unanswered") is True
    assert not any(m["role"] == "assistant" and not m.get("content") and
                   not m.get("tool_calls") for m in messages)  # fmt: skip


async def test_a_looping_model_sets_one_reminder_not_ten(
    lore: Runtime, model: ScriptedProvider
) -> None:
    call = {"text": "take the pills", "when": "in 10 minutes"}
    model.tool_calls([("set_reminder", call)] * 10).reply("Done.")
    out, err = io.StringIO(), io.StringIO()
    assert await run_once(lore, HOME, "remind me in 10 minutes to take the pills", out=out,
                          err=err) == 0  # fmt: skip
    assert len(lore.reminders.list(HOME)) == 1
    results = [
        content_text(m["content"]) for m in lore.session(HOME).messages if m["role"] == "tool"
    ]
    assert results[0].startswith("Reminder #1 set for")
    assert all(r.startswith("Already set: reminder #1 is already set for") for r in results[1:])


async def test_the_same_text_at_another_time_is_another_reminder(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.tool_calls(
        [
            ("set_reminder", {"text": "stretch", "when": "in 10 minutes"}),
            ("set_reminder", {"text": "stretch", "when": "in 20 minutes"}),
        ]
    ).reply("Done.")
    await run_once(lore, HOME, "stretch reminders", out=io.StringIO(), err=io.StringIO())
    assert len(lore.reminders.list(HOME)) == 2


async def test_a_failed_slash_command_fails_a_one_shot_run(lore: Runtime) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert await run_once(lore, HOME, "/forget 99", out=out, err=err) == 1
    assert out.getvalue() == ""
    assert (
        err.getvalue() == "lore: Nothing forgotten: there is no memory #99 in this conversation\n"
    )
    assert await run_once(lore, HOME, "/remember I like tea", out=out, err=err) == 0


@pytest.mark.parametrize("message", ["", "   ", "\n"])
def test_an_empty_message_is_refused_before_anything_is_sent(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    monkeypatch.setenv("LORE_MODEL", "scripted")
    assert main(["chat", "-m", message]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == "lore: the message is empty; nothing was sent\n"
