"""The model's reminder tools, called the way a turn calls them (through the registry)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from lore.core.tools import ToolContext, ToolRegistry, ToolResult
from lore.llm.base import ToolCall
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.reminders import create_reminder
from lore.reminders.feature import reminders_feature
from lore.runtime import Runtime
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # Monday 17:00 in Taipei


def context(scope: str = "line:group:family", author: str = "john", **extra: Any) -> ToolContext:
    values: dict[str, Any] = {
        "scope": scope, "author": author, "session_id": "s1", "message_index": 0, "now": NOW,
        "timezone": "Asia/Taipei", "channel": "line", **extra,
    }  # fmt: skip
    return ToolContext(**values)


async def call(lore: Runtime, name: str, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    registry = ToolRegistry(reminders_feature(lore).tools)
    return await registry.call(ToolCall("c1", name, json.dumps(args)), ctx or context())


def stored(lore: Runtime, scope: str = "line:group:family") -> list[str]:
    return [r.text for r in lore.reminders.list(scope, include_done=True)]


async def test_set_reminder_states_the_absolute_local_fire_time(lore: Runtime) -> None:
    result = await call(lore, "set_reminder", text="call mom", when="2026-12-01T09:00:00+08:00")
    assert not result.is_error
    assert result.content == ("Reminder #1 set for Tue 2026-12-01 09:00 (Asia/Taipei), in 16 h.")
    [reminder] = lore.reminders.list("line:group:family")
    assert (reminder.author, reminder.channel, reminder.session_id) == ("john", "line", "s1")


@pytest.mark.parametrize(
    ("when", "fires"),
    [
        ("明天早上9点", "Tue 2026-12-01 09:00"),
        ("завтра в 9", "Tue 2026-12-01 09:00"),
        ("in 10 minutes", "Mon 2026-11-30 17:10"),
    ],
)
async def test_set_reminder_reads_phrases_in_the_conversations_zone(
    lore: Runtime, when: str, fires: str
) -> None:
    result = await call(lore, "set_reminder", text="x", when=when)
    assert f"set for {fires} (Asia/Taipei)" in result.content


async def test_the_conversations_timezone_wins_over_the_configured_one(lore: Runtime) -> None:
    ctx = context(timezone="Europe/Moscow")
    result = await call(lore, "set_reminder", ctx, text="x", when="tomorrow 9am")
    assert "set for Tue 2026-12-01 09:00 (Europe/Moscow)" in result.content


async def test_a_recurring_reminder_says_how_it_repeats(lore: Runtime) -> None:
    result = await call(lore, "set_reminder", text="pills", when="tomorrow 9am", recurrence="daily")
    assert result.content.endswith("then repeating daily 09:00.")


async def test_a_recurrence_alone_fires_at_its_first_occurrence(lore: Runtime) -> None:
    result = await call(lore, "set_reminder", text="stand up", recurrence="weekdays 10:00")
    assert "set for Tue 2026-12-01 10:00 (Asia/Taipei)" in result.content


async def test_a_recurrence_sent_as_when_is_understood(lore: Runtime) -> None:
    result = await call(lore, "set_reminder", text="water", when="every 2h")
    assert not result.is_error
    assert "repeating every 2h" in result.content


async def test_setting_a_reminder_leaves_a_notice_for_the_user(lore: Runtime) -> None:
    ctx = context()
    await call(lore, "set_reminder", ctx, text="x", when="in 10 minutes")
    assert ctx.notices == ["⏰ reminder #1 set for Mon 2026-11-30 17:10 (Asia/Taipei)"]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"text": "x", "when": "yesterday at 9"}, "not in the future"),
        ({"text": "x", "when": "today 8am"}, "not in the future"),
        ({"text": "x", "when": "blah"}, "could not understand the time 'blah'"),
        ({"text": "x", "when": "明天25点"}, "not a valid time"),
        ({"text": "x", "recurrence": "cron 0 0 31 2 *"}, "never fires"),
        ({"text": "x", "when": "in 5 minutes", "recurrence": "every 10s"}, "unknown recurrence"),
        ({"text": "x"}, "needs a time"),
        ({"when": "in 5 minutes"}, "'text' is required"),
    ],
)
async def test_refused_reminders_give_the_model_a_reason_and_store_nothing(
    lore: Runtime, args: dict[str, Any], reason: str
) -> None:
    result = await call(lore, "set_reminder", **args)
    assert result.is_error
    assert reason in result.content
    assert "\n" not in result.content
    assert stored(lore) == []


async def test_list_reminders_shows_only_this_conversations_pending_ones(lore: Runtime) -> None:
    await call(lore, "set_reminder", text="ours", when="in 10 minutes", recurrence="every 1h")
    await call(lore, "set_reminder", context("telegram:1"), text="theirs", when="in 5 minutes")
    result = await call(lore, "list_reminders")
    assert result.content == (
        "1 pending reminder(s):\n#1 Mon 2026-11-30 17:10 (Asia/Taipei), in 10 min — ours "
        "[repeats every 1h] (set by john)"
    )


async def test_list_reminders_says_when_there_are_none(lore: Runtime) -> None:
    assert (await call(lore, "list_reminders")).content == (
        "No pending reminders in this conversation."
    )


async def test_cancel_reminder_cancels_by_id(lore: Runtime) -> None:
    ctx = context()
    await call(lore, "set_reminder", ctx, text="call mom", when="in 10 minutes")
    result = await call(lore, "cancel_reminder", ctx, id=1)
    assert result.content == "Cancelled reminder #1: call mom"
    assert lore.reminders.list("line:group:family") == []
    assert not (await call(lore, "cancel_reminder", ctx, id="#1")).content.startswith("Cancelled")


async def test_cancel_reminder_refuses_an_id_it_was_never_shown(lore: Runtime) -> None:
    """Set from the terminal, never listed: the model guessed #1."""
    await call(lore, "set_reminder", text="倒垃圾 / вынести мусор", when="in 10 minutes")

    result = await call(lore, "cancel_reminder", id=1)

    assert result.is_error
    assert "#1 was not shown in this conversation" in result.content
    assert [r.status for r in lore.reminders.list("line:group:family")] == ["pending"]


async def test_an_id_list_reminders_showed_can_be_cancelled(lore: Runtime) -> None:
    await call(lore, "set_reminder", text="вынести мусор", when="in 10 minutes")
    ctx = context()

    await call(lore, "list_reminders", ctx)
    result = await call(lore, "cancel_reminder", ctx, id=1)

    assert result.content == "Cancelled reminder #1: вынести мусор"


async def test_cancelling_another_conversations_reminder_changes_nothing(lore: Runtime) -> None:
    await call(lore, "set_reminder", context("telegram:1"), text="theirs", when="in 5 minutes")
    result = await call(lore, "cancel_reminder", context(shown_reminder_ids={1}), id=1)
    assert result.is_error
    assert "no reminder #1 in this conversation" in result.content
    assert [r.status for r in lore.reminders.list("telegram:1")] == ["pending"]


async def test_cancel_reminder_refuses_a_non_number(lore: Runtime) -> None:
    result = await call(lore, "cancel_reminder", id="soon")
    assert result.is_error and "reminder number" in result.content


@pytest.mark.parametrize("bad", [True, 1.5, 10**30, "1e3"])
async def test_cancel_reminder_refuses_what_is_not_a_reminder_number(
    lore: Runtime, bad: Any
) -> None:
    ctx = context()
    await call(lore, "set_reminder", ctx, text="call mom", when="in 10 minutes")

    result = await call(lore, "cancel_reminder", ctx, id=bad)

    assert result.is_error
    assert [r.status for r in lore.reminders.list("line:group:family")] == ["pending"]


def test_descriptions_fence_reminders_from_memories(lore: Runtime) -> None:
    tools = {tool.name: tool for tool in reminders_feature(lore).tools}
    assert set(tools) == {"set_reminder", "list_reminders", "cancel_reminder"}
    assert "never remember" in tools["set_reminder"].description
    assert "lasting fact" in tools["set_reminder"].description
    assert "forget" in tools["cancel_reminder"].description
    assert tools["set_reminder"].parameters["required"] == ["text"]


async def test_the_runtime_offers_the_reminder_tools(lore: Runtime) -> None:
    assert {"set_reminder", "list_reminders", "cancel_reminder"} <= set(lore.tools.names())


async def test_a_reminder_set_by_the_tool_fires_at_the_stated_time(lore: Runtime) -> None:
    await call(lore, "set_reminder", text="x", when="2026-12-01T09:00:00+08:00")
    fire = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)
    assert lore.reminders.claim_due(fire - timedelta(seconds=1)) == []
    assert [d.id for d in lore.reminders.claim_due(fire)] == [1]


def test_a_delay_under_a_minute_is_not_called_zero_minutes() -> None:
    from datetime import timedelta

    from lore.reminders import in_words

    assert in_words(timedelta(seconds=4)) == "in less than a minute"
    assert in_words(timedelta(minutes=10)) == "in 10 min"


async def test_a_reminder_set_in_an_earlier_turn_is_cancelled_in_a_later_one(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = lore.conversation("cli:default", emit=lambda event: None)
    model.tool_call("set_reminder", {"text": "给妈妈打电话", "when": "in 1 hour"}).reply("Set.")
    await conversation.send("remind me to call mom in an hour")
    create_reminder(
        lore.reminders, scope="cli:default", author="john", text="pay rent", when="in 2 hours",
        now=NOW, zone=ZoneInfo("Asia/Taipei"),
    )  # fmt: skip

    model.tool_call("cancel_reminder", {"id": 1}).reply("Cancelled.")
    await conversation.send("cancel the call mom reminder")
    model.tool_call("cancel_reminder", {"id": 2}).reply("Could not.")
    await conversation.send("cancel the other one too")

    assert content_text(model.requests[3].messages[-1]["content"]).startswith(
        "Cancelled reminder #1"
    )
    assert content_text(model.requests[5].messages[-1]["content"]).startswith("Error:")
    assert [r.text for r in lore.reminders.list("cli:default")] == ["pay rent"]
