"""The family group of the LINE bot Lore grew from, end to end: signed webhooks into the
real gateway, the real line-bot-sdk client against a fake Messaging API, the scripted model.

Two people write in a family group. Amy asks Lore to remember when mom's flight lands;
David corrects the time; the memory block shows the correction, and its history both
authors. Amy asks to be reminded; the reminder comes back to the group as a push that
mentions her, once, though the gateway was stopped and started in between. Another group
and a 1:1 chat never see any of it: not in a prompt, a search, a list, the web page or the
API.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from lore.cli import main
from lore.clock import FixedClock
from lore.config import ApiClientConfig, Config
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.reminders.delivery import Delivery, session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import Runtime
from tests.line_server import FakeLine, LineGateway, line_gateway, line_settings
from tests.readme_transcripts import docs_text

JOHN = "U10000000000000000000000000000j0h"  # the owner
AMY = "U20000000000000000000000000000a3y"
DAVID = "U30000000000000000000000000000d4v"
ZOE = "U40000000000000000000000000000z0e"
FAMILY = "C1000000000000000000000000000fam1"
CLIMBING = "C2000000000000000000000000000c1mb"
FAMILY_SCOPE = f"line:group:{FAMILY}"
CLIMBING_SCOPE = f"line:group:{CLIMBING}"
AMY_SCOPE = f"line:user:{AMY}"
CLIMBING_TOKEN = "climbing-club-token"


class Script:
    """The model's answers: chat turns in order, extraction passes in order ([] when
    none is queued), and every request kept by scope's wording for the checks."""

    def __init__(self) -> None:
        self.chat: list[Step] = []
        self.extraction: list[str] = []
        self._calls = itertools.count(1)

    def say(self, text: str) -> None:
        self.chat.append(Step(text=text))

    def call(self, name: str, arguments: str) -> None:
        self.chat.append(Step(tool_calls=[ToolCall(f"call_{next(self._calls)}", name, arguments)]))

    def __call__(self, request: ChatRequest) -> Step:
        if request.system == EXTRACTION_PROMPT:
            return Step(text=self.extraction.pop(0) if self.extraction else "[]")
        if self.chat:
            return self.chat.pop(0)
        return Step(text=f"re: {request.messages[-1]['content']}")


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine() as server:
        server.profiles.update({JOHN: "John", AMY: "Amy 美美", DAVID: "David", ZOE: "Zoe"})
        yield server


@pytest.fixture
def family_config(config: Config, fake: FakeLine) -> Config:
    climbing = ApiClientConfig(token=CLIMBING_TOKEN, scopes=(CLIMBING_SCOPE,))
    return replace(
        config,
        line=line_settings(fake, owner_ids=(JOHN,), allow=(AMY,)),
        api=replace(config.api, clients={"climbing": climbing}),
        extraction=replace(config.extraction, enabled=True),
    )


async def _settle(line: LineGateway, count: int) -> list[dict[str, Any]]:
    """Wait for `count` messages out, then for the turns' after-work (extraction)."""
    sent = await line.sent(count)
    await line.channel.drain()
    await line.lore.background.drain()
    return sent


async def _deliver_due(line: LineGateway, now: Any, *, crash_after_push: bool = False) -> int:
    """One pass of `lore serve`'s scheduler at `now`; how many reminders it delivered.
    `crash_after_push`: the process dies after LINE took the push, before it is marked."""
    lore = line.lore
    into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)

    async def deliver(due: Delivery) -> None:
        await into_session(due)
        if crash_after_push:
            raise RuntimeError("killed before marking the delivery done")

    with lore.bus.deliver_for("line", line.channel.deliver):
        scheduler = Scheduler(lore.reminders, FixedClock(now), deliver)
        return len(await scheduler.run_once(now))


def _block(lore: Runtime, scope: str) -> str:
    from lore.memory.block import render_memory_block

    return render_memory_block(
        lore.memory, scope, now=lore.clock.now(), zone=lore.zone, budget_chars=4000
    ).text


async def test_the_family_group_remembers_corrects_and_reminds_and_no_one_else_sees_it(
    family_config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeLine,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Script()
    model.default = script

    async with line_gateway(family_config, model, clock, fake) as line:
        # Amy asks Lore to remember; the model notes it with the remember tool.
        script.call("remember", '{"content": "Mom\'s flight lands Thursday 3 PM", "kind": "plan"}')
        script.say("Noted: mom's flight lands Thursday 3 PM.")
        await line.say(
            "@Lore remember mom's flight lands Thursday 3 PM",
            user=AMY,
            group=FAMILY,
            mention_bot=True,
        )
        [noted] = await _settle(line, 1)
        assert noted["to"] == FAMILY and noted["messages"][0]["text"].startswith("Noted")
        [first] = line.lore.memory.active(FAMILY_SCOPE, now=clock.now())
        assert (first.content, first.author) == ("Mom's flight lands Thursday 3 PM", "Amy 美美")

        # David corrects the time; extraction updates the note he corrected.
        script.say("Got it, 5 PM.")
        update = {"op": "update", "id": first.id, "content": "Mom's flight lands Thursday 5 PM"}
        script.extraction.append(json.dumps([update]))
        await line.say("Lore, actually her flight lands at 5 PM, not 3", user=DAVID, group=FAMILY)
        await _settle(line, 2)
        [corrected] = line.lore.memory.active(FAMILY_SCOPE, now=clock.now())
        assert corrected.content == "Mom's flight lands Thursday 5 PM"
        assert corrected.author == "David"
        block = _block(line.lore, FAMILY_SCOPE)
        assert "Mom's flight lands Thursday 5 PM (noted by David" in block
        assert "3 PM" not in block
        history = line.lore.memory.history(FAMILY_SCOPE, corrected.id)
        assert {entry.actor for entry in history} == {"Amy 美美", "David"}
        async with line.client() as owner:
            shown = await owner.get(
                f"/api/memories/{corrected.id}/history", params={"scope": FAMILY_SCOPE}
            )
        assert "Amy 美美" in shown.text and "David" in shown.text

        # Amy asks to be reminded; the next turn's prompt carries the corrected note.
        script.call("set_reminder", '{"text": "pick up mom at the airport", "when": "in 2 hours"}')
        script.say("I'll remind you in 2 hours.")
        await line.say(
            "@Lore remind me to pick up mom at the airport in 2 hours",
            user=AMY,
            group=FAMILY,
            mention_bot=True,
        )
        await _settle(line, 3)
        asked = [r for r in model.requests if r.system != EXTRACTION_PROMPT][-2]
        assert "Mom&#x27;s flight lands Thursday 5 PM" in asked.system or (
            "Mom's flight lands Thursday 5 PM" in asked.system
        )
        [reminder] = line.lore.reminders.list(FAMILY_SCOPE)
        assert reminder.author == "Amy 美美"

    # The gateway stops and starts again on the same home: the reminder is still there.
    due = clock.now() + timedelta(hours=2, minutes=1)
    async with line_gateway(family_config, model, clock, fake) as line:
        # The first try reaches LINE, then the process dies before marking it delivered.
        assert await _deliver_due(line, due, crash_after_push=True) == 0
    async with line_gateway(family_config, model, clock, fake) as line:
        # The retry carries the same retry key: LINE says it has it, nothing is sent twice.
        assert await _deliver_due(line, due + timedelta(minutes=5)) == 1
        assert await _deliver_due(line, due + timedelta(hours=1)) == 0
        pushes = [s for s in fake.sent if s["kind"] == "push"]
        assert len(pushes) == 1
        assert fake.calls.count("POST /v2/bot/message/push") == 2  # the retry got a 409
        [message] = pushes[0]["messages"]
        assert pushes[0]["to"] == FAMILY and message["type"] == "textV2"
        assert message["text"] == "⏰ Reminder for {user}: pick up mom at the airport"
        assert message["substitution"]["user"]["mentionee"] == {"type": "user", "userId": AMY}
        reminded = [m for m in line.lore.session(FAMILY_SCOPE).messages if m.get("reminder_id")]
        assert len(reminded) == 1  # and once in the conversation

        # Another group: Zoe asks what is on; the prompt holds nothing of the family's.
        before, out = len(model.requests), len(fake.sent)
        script.call("memory_search", '{"query": "mom flight airport"}')
        script.say("Nothing on record.")
        await line.say("Lore, when does mom's flight land?", user=ZOE, group=CLIMBING)
        await _settle(line, out + 1)  # one chat at a time: the script answers in order
        # Amy in her 1:1 chat (a guest on the allow list) asks the same.
        script.call("memory_search", '{"query": "mom flight airport"}')
        script.say("I don't know.")
        await line.say("when does mom's flight land?", user=AMY)
        answers = (await _settle(line, out + 2))[out:]
        assert {a["to"] for a in answers} == {CLIMBING, AMY}
        others = [r for r in model.requests[before:] if r.system != EXTRACTION_PROMPT]
        assert others, "the other chats' turns reached the model"
        for request in others:
            seen = request.system + "".join(str(m.get("content")) for m in request.messages)
            assert "Thursday" not in seen and "5 PM" not in seen and "3 PM" not in seen
        for scope in (CLIMBING_SCOPE, AMY_SCOPE):
            tools = [m for m in line.lore.session(scope).messages if m["role"] == "tool"]
            assert tools and all("Thursday" not in str(t["content"]) for t in tools)
            assert line.lore.memory.active(scope, now=clock.now()) == []
            assert line.lore.reminders.list(scope) == []

        # The API and the web page: the climbing club's token sees its own group only.
        async with line.client(token="climbing-club-token") as club:
            memories = await club.get("/api/memories", params={"scope": CLIMBING_SCOPE})
            found = await club.get("/api/search", params={"scope": CLIMBING_SCOPE, "q": "flight"})
            reminders = await club.get("/api/reminders", params={"scope": CLIMBING_SCOPE})
            page = await club.get("/", params={"scope": CLIMBING_SCOPE})
            family = await club.get("/api/memories", params={"scope": FAMILY_SCOPE})
            family_page = await club.get("/", params={"scope": FAMILY_SCOPE})
        assert memories.status_code == 200 and "Thursday" not in memories.text
        assert found.json()["results"] == [] or "Thursday" not in found.text
        assert reminders.json()["reminders"] == [] and "airport" not in reminders.text
        assert page.status_code == 200 and "Thursday" not in page.text
        assert (family.status_code, family_page.status_code) == (403, 403)
        assert "Thursday" not in family.text and "Thursday" not in family_page.text
        async with line.client() as owner:
            amy_page = await owner.get("/", params={"scope": AMY_SCOPE})
            amy_search = await owner.post(
                "/api/memories/search", params={"scope": AMY_SCOPE}, json={"query": "flight"}
            )
        assert "Thursday" not in amy_page.text and amy_search.json()["results"] == []

    # What the family saw, as the README shows it.
    readme = docs_text()
    assert fake.transcript(FAMILY) in readme

    # The command line, on the same home: lists per scope.
    for scope in (CLIMBING_SCOPE, AMY_SCOPE):
        main(["memory", "list", "--scope", scope])
        main(["remind", "list", "--session", scope])
    listed = capsys.readouterr().out
    assert "Thursday" not in listed and "airport" not in listed
    main(["memory", "list", "--scope", FAMILY_SCOPE])
    listed = capsys.readouterr().out
    assert listed == "#2 [plan] Mom's flight lands Thursday 5 PM (noted by David, 2026-11-30)\n"
    assert f"$ lore memory list --scope line:group:C1…\n{listed}" in readme
