"""Scheduled tasks end to end in one process, on both backends: the model schedules one,
`lore serve`'s runner runs its turn at its time with the task's trust and budget, and
the reply reaches the conversation once; failures stay visible with their reason."""

from __future__ import annotations

import json

import pytest

from lore.clock import FixedClock
from lore.daemon import Daemon
from lore.events import Inbound
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.reminders.delivery import Delivery, reminder_event, reminder_line
from lore.runtime import Runtime
from lore.tasks import create_task, describe_task
from lore.tasks.runner import TaskRunner, TurnReply
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

HOME = "cli:default"


class Killed(BaseException):
    """The process ending where it stands (as kill -9 does: nothing after runs)."""


def task_at(lore: Runtime, when: str = "in 10 minutes", **kwargs: object) -> int:
    task = create_task(
        lore.tasks,
        scope=kwargs.pop("scope", HOME),  # type: ignore[arg-type]
        author="john",
        prompt=kwargs.pop("prompt", "look at the weather; tell me if I need an umbrella"),  # type: ignore[arg-type]
        when=when,
        now=lore.clock.now(),
        zone=lore.zone,
        **kwargs,  # type: ignore[arg-type]
    )
    return task.id


def replies(lore: Runtime, scope: str = HOME) -> list[str]:
    return [str(m["content"]) for m in lore.session(scope).messages if m["role"] == "assistant"]


async def run_due(lore: Runtime, clock: FixedClock, minutes: float = 11) -> Daemon:
    clock.advance(minutes=minutes)
    daemon = Daemon(lore)
    await daemon.tasks.run_once()
    await daemon.scheduler.run_once()
    return daemon


async def test_the_model_schedules_a_task_that_runs_a_turn_not_a_reminder(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.tool_call(
        "schedule_task",
        {"prompt": "check the weather for Hualien", "recurrence": "weekdays 08:00"},
    ).reply("Done: every weekday at 8.")
    outcome = await lore.bus.send(Inbound(HOME, "cli", "john", "每个工作日早上8点看看天气"))
    assert outcome.ok
    [task] = lore.tasks.list(HOME)
    assert (task.prompt, task.recurrence, task.trust) == (
        "check the weather for Hualien",
        "weekly mon,tue,wed,thu,fri 08:00",
        "owner",
    )
    assert lore.reminders.list(HOME) == []
    spec = next(s for s in lore.tools.specs() if s.name == "schedule_task")
    assert "Not set_reminder" in spec.description


async def test_a_due_task_runs_one_turn_whose_reply_reaches_the_conversation_once(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = task_at(lore)
    model.reply("Rain after 3 pm: take an umbrella. Дождь после трёх.")
    await run_due(lore, clock)
    [request] = model.requests
    assert f"(scheduled task #{tid}) look at the weather" in request.messages[-1]["content"]
    assert replies(lore) == ["Rain after 3 pm: take an umbrella. Дождь после трёх."]
    assert f"delivered task #{tid} to {HOME}" in capsys.readouterr().out
    again = Daemon(lore)  # a second worker later finds nothing to run or to send
    assert await again.tasks.run_once() == []
    assert await again.scheduler.run_once() == []
    assert len(model.requests) == 1
    [task] = lore.tasks.list(HOME, include_done=True)
    assert (task.status, task.last_status) == ("finished", "done")


async def test_a_task_run_long_after_its_time_is_marked_late(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    task_at(lore)
    model.reply("No umbrella needed.")
    await run_due(lore, clock, minutes=180)
    assert f"delivered task #1 to {HOME} (late): No umbrella needed." in capsys.readouterr().out
    [item] = lore.outbox.items(HOME)
    assert reminder_line(Delivery(item, clock.now())) == (
        "🗓 No umbrella needed. (late) — was due Mon 2026-11-30 17:10 (Asia/Taipei)"
    )  # as a chat channel sends it
    shown = reminder_event(Delivery(item, clock.now()))  # as the terminal shows it
    assert (shown.mark, shown.mention) == ("🗓", "")


async def test_a_task_past_its_budget_of_seconds_fails_visibly_and_says_so(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    tid = task_at(lore, max_seconds=5)
    model.step(Step(text="too slow", delay=30))
    await run_due(lore, clock)
    [task] = lore.tasks.list(HOME, include_done=True)
    assert task.last_status == "failed"
    assert "budget of 5 s" in task.last_error
    assert "last run failed: it ran past its budget of 5 s" in describe_task(task)
    assert replies(lore)[-1] == (
        f"🗓 Scheduled task #{tid} could not run: it ran past its budget of 5 s and was stopped"
    )


async def test_a_model_error_fails_the_run_with_its_reason_never_silently(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    from lore.errors import AuthenticationError

    task_at(lore, recurrence="every 1h")
    model.fail(AuthenticationError("the API key was refused", status=401))
    await run_due(lore, clock)
    [task] = lore.tasks.list(HOME)
    assert task.status == "pending"  # a recurring task runs again next time
    assert task.last_status == "failed" and "the API key was refused" in task.last_error
    assert "could not run" in replies(lore)[-1]


async def test_a_tasks_turn_keeps_to_its_own_budget_of_tool_rounds(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    task_at(lore, max_rounds=1)

    def answer(request: ChatRequest) -> Step:
        if request.tools:  # rounds left: keep searching
            call = ToolCall(f"c{len(model.requests)}", "memory_search", json.dumps({"query": "x"}))
            return Step(tool_calls=[call])
        return Step(text="Searched once: nothing found.")

    model.default = answer
    await run_due(lore, clock)
    assert replies(lore)[-1] == "Searched once: nothing found."
    assert len(model.requests) == 2  # one round of tools, then the answer without tools


async def test_a_member_scheduled_task_runs_with_the_members_trust(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    task_at(lore, scope="telegram:-100", trust="member", channel="telegram")
    model.reply("Group digest: nothing new.")
    await run_due(lore, clock)
    [request] = model.requests
    names = {tool.name for tool in request.tools}
    assert "exec" not in names and "schedule_task" in names  # no owner-only tools


async def test_a_turn_answered_before_a_crash_is_sent_not_asked_again(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    task_at(lore)
    clock.advance(minutes=11)
    daemon = Daemon(lore)

    async def answered_then_killed(inbound: Inbound) -> TurnReply:
        await daemon._task_turn(inbound)
        raise Killed  # the process ends before the run is finished

    model.reply("Sunny all day.")
    dying = TaskRunner(lore.tasks, lore.sessions, clock, answered_then_killed, owner="dead")
    with pytest.raises(Killed):
        await dying.run_once()
    lore.tasks.end_leases([dying.owner])  # its process ended
    await daemon.tasks.run_once()
    await daemon.scheduler.run_once()
    assert len(model.requests) == 1
    assert replies(lore) == ["Sunny all day."]
