"""The heartbeat: a turn over HEARTBEAT.md that speaks to the owner only when something
needs them (anything but HEARTBEAT_OK), and whose own history never grows."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.clock import FixedClock
from lore.config import load_config
from lore.daemon import Daemon
from lore.errors import ConfigError
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime
from lore.tasks.heartbeat import HEARTBEAT_SCOPE, heartbeat_once, needs_attention

CHECKLIST = "# Checks\n- is anything due this week?\n- 护照快过期了吗？\n"


def write_checklist(lore: Runtime, text: str = CHECKLIST) -> None:
    lore.config.home.mkdir(parents=True, exist_ok=True)
    (lore.config.home / "HEARTBEAT.md").write_text(text, encoding="utf-8")


def test_the_heartbeat_is_off_by_default_and_its_period_is_checked(home: Path) -> None:
    env = {"LORE_HOME": str(home), "USER": "john"}
    assert load_config(env=env).heartbeat.seconds == 0
    assert load_config(env=env, flags={"heartbeat.every": "30m"}).heartbeat.seconds == 1800
    with pytest.raises(ConfigError, match="heartbeat.every"):
        load_config(env=env, flags={"heartbeat.every": "often"})


@pytest.mark.parametrize(
    ("reply", "speaks"),
    [("HEARTBEAT_OK", False), (" HEARTBEAT_OK.\n", False), ("**HEARTBEAT_OK**", False),
     ("Passport expires Friday.", True), ("HEARTBEAT_OK, but the passport expires", True)],
)  # fmt: skip
def test_only_the_token_alone_is_silence(reply: str, speaks: bool) -> None:
    assert needs_attention(reply) is speaks


async def test_no_checklist_costs_no_call(lore: Runtime, model: ScriptedProvider) -> None:
    daemon = Daemon(lore)
    assert await heartbeat_once(lore, daemon._task_turn) is None
    write_checklist(lore, "# Checks\n\n")  # headings only
    assert await heartbeat_once(lore, daemon._task_turn) is None
    assert model.requests == []


async def test_all_well_says_nothing_to_the_owner(lore: Runtime, model: ScriptedProvider) -> None:
    write_checklist(lore)
    model.reply("HEARTBEAT_OK")
    daemon = Daemon(lore)
    assert await heartbeat_once(lore, daemon._task_turn) is None
    assert "- 护照快过期了吗？" in str(model.requests[0].messages[-1]["content"])
    assert "HEARTBEAT_OK" in str(model.requests[0].messages[-1]["content"])
    assert lore.outbox.items("cli:default") == []


async def test_what_needs_attention_reaches_the_owners_conversation_once(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    write_checklist(lore)
    model.reply("Your passport expires on Friday. Паспорт истекает в пятницу.")
    daemon = Daemon(lore)
    said = await heartbeat_once(lore, daemon._task_turn)
    assert said == "Your passport expires on Friday. Паспорт истекает в пятницу."
    await daemon.scheduler.run_once()
    await daemon.scheduler.run_once()
    owner = [m["content"] for m in lore.session("cli:default").messages]
    assert owner == ["💓 Your passport expires on Friday. Паспорт истекает в пятницу."]


async def test_the_heartbeats_own_history_does_not_grow_with_runs(
    lore: Runtime, model: ScriptedProvider, clock: FixedClock
) -> None:
    write_checklist(lore)
    daemon = Daemon(lore)
    for _ in range(5):
        model.reply("HEARTBEAT_OK")
        await heartbeat_once(lore, daemon._task_turn)
        clock.advance(minutes=30)
    sizes = {len(request.messages) for request in model.requests}
    assert sizes == {1}  # each run's request: the checklist alone, no earlier runs
    assert len(lore.session(HEARTBEAT_SCOPE).messages) == 2  # the last run only
