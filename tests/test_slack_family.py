"""The family scenario on Slack, end to end: signed Events API calls into the real gateway,
the real slack_sdk client against a fake Slack Web API, the scripted model.

Two people write in #family. Amy asks Lore to remember when mom's flight lands; David
corrects the time; the memory block shows the correction, and its history both authors.
Amy asks to be reminded; the reminder comes back to #family mentioning her with a real
`<@U…>`, once, though Lore was stopped and started in between. #climbing and a thread
never see any of it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from tests.readme_transcripts import docs_text
from tests.slack_server import BOT_USER, FakeSlack, SlackLore, slack_lore, slack_settings

JOHN = "U061F7AUR"  # the owner
AMY = "U2AMY0001"
DAVID = "U3DAVID01"
ZOE = "U4ZOE0001"
FAMILY = "C0FAMILY01"
CLIMBING = "C0CLIMB001"
MENTION = f"<@{BOT_USER}>"


class Script:
    """The model's answers: chat turns in order, extraction passes in order."""

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
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        server.users.update({JOHN: "John", AMY: "Amy 美美", DAVID: "David", ZOE: "Zoe"})
        server.channels.update({FAMILY: "family", CLIMBING: "climbing"})
        yield server


@pytest.fixture
def family_config(config: Config, fake: FakeSlack) -> Config:
    return replace(
        config,
        # The Events API only: Socket Mode has its own tests.
        slack=slack_settings(fake, owner_ids=(JOHN,), app_token=""),
        extraction=replace(config.extraction, enabled=True),
    )


async def _deliver_due(slack: SlackLore, now: datetime) -> int:
    """One pass of `lore serve`'s scheduler at `now`; how many reminders it delivered."""
    lore = slack.lore
    into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)

    with lore.bus.deliver_for("slack", slack.channel.deliver):
        scheduler = Scheduler(lore.reminders, FixedClock(now), into_session)
        return len(await scheduler.run_once(now))


async def test_the_family_channel_remembers_corrects_and_reminds_and_no_one_else_sees_it(
    family_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    script = Script()
    model.default = script
    family_scope, climbing_scope = f"slack:{FAMILY}", f"slack:{CLIMBING}"

    async with slack_lore(family_config, model, clock, fake) as slack:
        # Amy mentions Lore: Slack sends a message and an app_mention; answered once.
        script.call("remember", '{"content": "Mom\'s flight lands Thursday 3 PM", "kind": "plan"}')
        script.say("Noted: mom's flight lands Thursday 3 PM.")
        await slack.say(
            f"{MENTION} remember mom's flight lands Thursday 3 PM",
            user=AMY,
            channel=FAMILY,
            mention=True,
        )
        [noted] = await slack.settle(1)
        assert (noted["channel"], noted["thread_ts"]) == (FAMILY, None)
        [first] = slack.lore.memory.active(family_scope, now=clock.now())
        assert (first.content, first.author) == ("Mom's flight lands Thursday 3 PM", "Amy 美美")

        # Zoe chats without addressing Lore: kept in the conversation, not answered.
        await slack.say("I'll bring flowers 💐", user=ZOE, channel=FAMILY)
        # David corrects the time; extraction updates the note he corrected.
        script.say("Got it, 5 PM.")
        update = {"op": "update", "id": first.id, "content": "Mom's flight lands Thursday 5 PM"}
        script.extraction.append(json.dumps([update]))
        await slack.say(
            f"{MENTION} actually her flight lands at 5 PM, not 3",
            user=DAVID,
            channel=FAMILY,
            mention=True,
        )
        await slack.settle(2)
        [corrected] = slack.lore.memory.active(family_scope, now=clock.now())
        assert corrected.content == "Mom's flight lands Thursday 5 PM"
        assert corrected.author == "David"
        history = slack.lore.memory.history(family_scope, corrected.id)
        assert {entry.actor for entry in history} == {"Amy 美美", "David"}
        said = [m for m in slack.lore.session(family_scope).messages if m["role"] == "user"]
        assert [m["author"] for m in said] == ["Amy 美美", "Zoe", "David"]
        assert said[1]["content"] == "I'll bring flowers 💐"

        # Amy asks to be reminded.
        script.call("set_reminder", '{"text": "pick up mom at the airport", "when": "in 2 hours"}')
        script.say("I'll remind you in 2 hours.")
        await slack.say(
            f"{MENTION} remind me to pick up mom at the airport in 2 hours",
            user=AMY,
            channel=FAMILY,
            mention=True,
        )
        await slack.settle(3)
        [reminder] = slack.lore.reminders.list(family_scope)
        assert reminder.author == "Amy 美美"
        assert fake.calls.count("users.info") == 3  # each name asked once, then cached

    # Lore stops and starts again on the same home: the reminder is still there.
    due = clock.now() + timedelta(hours=2, minutes=1)
    async with slack_lore(family_config, model, clock, fake) as slack:
        assert await _deliver_due(slack, due) == 1
        assert await _deliver_due(slack, due + timedelta(hours=1)) == 0
        posted = fake.sent[3:]
        assert [(p["channel"], p["text"]) for p in posted] == [
            (FAMILY, f"⏰ Reminder for <@{AMY}>: pick up mom at the airport")
        ]

        # #climbing: Zoe asks what is on; the prompt holds nothing of the family's.
        before = len(model.requests)
        script.call("memory_search", '{"query": "mom flight airport"}')
        script.say("Nothing on record.")
        await slack.say(f"{MENTION} when does mom's flight land?", user=ZOE, channel=CLIMBING)
        # A thread in #family is a conversation of its own.
        parent = fake.sent[0]["ts"]
        script.call("memory_search", '{"query": "mom flight"}')
        script.say("I don't know.")
        await slack.say(
            "when does the flight land?",
            user=DAVID,
            channel=FAMILY,
            thread_ts=parent,
            parent_user=BOT_USER,  # a thread under Lore's own message: said to Lore
        )
        answers = (await slack.settle(6))[4:]
        assert {(a["channel"], a["thread_ts"]) for a in answers} == {
            (CLIMBING, None),
            (FAMILY, parent),
        }
        others = [r for r in model.requests[before:] if r.system != EXTRACTION_PROMPT]
        assert others, "the other conversations' turns reached the model"
        for request in others:
            seen = request.system + "".join(str(m.get("content")) for m in request.messages)
            assert "Thursday" not in seen and "5 PM" not in seen
        for scope in (climbing_scope, f"slack:{FAMILY}:{parent}"):
            assert slack.lore.memory.active(scope, now=clock.now()) == []
            assert slack.lore.reminders.list(scope) == []
            assert slack.lore.session(scope).messages, scope

    # What #family saw, as the docs show it.
    assert fake.transcript(FAMILY) in docs_text()
