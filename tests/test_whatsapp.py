"""WhatsApp end to end: signed webhook calls into the real gateway, the real httpx client
against a fake Graph API on 127.0.0.1, the scripted model.

Amy (a guest on the allow list) asks Lore to remember when mom's flight lands, corrects
the time, and asks to be reminded; the reminder reaches her once, though the gateway was
stopped and started in between. The owner's own chat never sees any of it. Ten messages
at once are answered in order; a forged signature is refused and nothing is kept; a
reminder due outside the 24-hour window fails where `lore remind list` and the web page
show it. A notification delivered twice: tests/test_whatsapp_ledger.py, on both backends.
"""

from __future__ import annotations

import asyncio
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
from lore.metrics import METRICS
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from tests.readme_transcripts import docs_text
from tests.whatsapp_server import (
    VERIFY_TOKEN,
    FakeGraph,
    Notifications,
    WhatsAppGateway,
    whatsapp_gateway,
    whatsapp_settings,
)

JOHN = "15550001111"  # the owner
AMY = "886912345678"  # a guest
ZOE = "79161234567"  # a stranger
AMY_SCOPE = f"whatsapp:{AMY}"
JOHN_SCOPE = f"whatsapp:{JOHN}"
AMY_TOKEN = "amy-web-token"


class Script:
    """The model's answers: chat turns in order, extraction passes in order."""

    def __init__(self) -> None:
        self.chat: list[Step] = []
        self.extraction: list[str] = []
        self._calls = 0

    def say(self, text: str) -> None:
        self.chat.append(Step(text=text))

    def call(self, name: str, arguments: str) -> None:
        self._calls += 1
        self.chat.append(Step(tool_calls=[ToolCall(f"call_{self._calls}", name, arguments)]))

    def __call__(self, request: ChatRequest) -> Step:
        if request.system == EXTRACTION_PROMPT:
            return Step(text=self.extraction.pop(0) if self.extraction else "[]")
        if self.chat:
            return self.chat.pop(0)
        return Step(text=f"re: {request.messages[-1]['content']}")


@pytest.fixture
def fake() -> Iterator[FakeGraph]:
    with FakeGraph() as server:
        yield server


@pytest.fixture
def wa_config(config: Config, fake: FakeGraph) -> Config:
    amy = ApiClientConfig(token=AMY_TOKEN, scopes=(AMY_SCOPE,))
    return replace(
        config,
        whatsapp=whatsapp_settings(fake, owner_ids=(f"+{JOHN}",), allow=(AMY,)),
        api=replace(config.api, clients={"amy": amy}),
        extraction=replace(config.extraction, enabled=True),
    )


async def _say(wa: WhatsAppGateway, text: str, wa_id: str, name: str) -> dict[str, Any]:
    body = Notifications.text(text, wa_id=wa_id, name=name, at=wa.lore.clock.now().timestamp())
    response = await wa.post(body)
    assert response.status_code == 200, response.text
    return body


async def _settle(wa: WhatsAppGateway, count: int) -> list[dict[str, Any]]:
    sent = await wa.sent(count)
    await wa.channel.drain()
    await wa.lore.background.drain()
    return sent


async def _deliver_due(wa: WhatsAppGateway, now: Any) -> int:
    """One pass of `lore serve`'s scheduler at `now`; how many reminders it delivered."""
    lore = wa.lore
    into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
    with lore.bus.deliver_for("whatsapp", wa.channel.deliver):
        scheduler = Scheduler(lore.reminders, FixedClock(now), into_session)
        return len(await scheduler.run_once(now))


async def test_a_person_remembers_corrects_and_is_reminded_and_no_one_else_sees_it(
    wa_config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeGraph,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Script()
    model.default = script
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        script.call("remember", '{"content": "Mom\'s flight lands Thursday 3 PM", "kind": "plan"}')
        script.say("Noted: mom's flight lands Thursday 3 PM.")
        await _say(wa, "remember mom's flight lands Thursday 3 PM", AMY, "Amy 美美")
        [noted] = await _settle(wa, 1)
        assert noted["to"] == AMY and noted["text"].startswith("Noted")
        [first] = wa.lore.memory.active(AMY_SCOPE, now=clock.now())
        assert (first.content, first.author) == ("Mom's flight lands Thursday 3 PM", "Amy 美美")

        # A correction, in Russian: extraction updates the note it corrects.
        script.say("Понял, в 17:00.")
        update = {"op": "update", "id": first.id, "content": "Mom's flight lands Thursday 5 PM"}
        script.extraction.append(json.dumps([update]))
        await _say(wa, "нет, самолёт мамы прилетает в 17:00, не в 15:00", AMY, "Amy 美美")
        await _settle(wa, 2)
        [corrected] = wa.lore.memory.active(AMY_SCOPE, now=clock.now())
        assert corrected.content == "Mom's flight lands Thursday 5 PM"

        script.call("set_reminder", '{"text": "pick up mom at the airport", "when": "in 2 hours"}')
        script.say("I'll remind you in 2 hours.")
        await _say(wa, "remind me to pick up mom at the airport in 2 hours", AMY, "Amy 美美")
        await _settle(wa, 3)
        [reminder] = wa.lore.reminders.list(AMY_SCOPE)
        assert reminder.author == "Amy 美美"

    # Stopped and started on the same home: the reminder goes out once, in the window.
    due = clock.now() + timedelta(hours=2, minutes=1)
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        assert await _deliver_due(wa, due) == 1
        assert await _deliver_due(wa, due + timedelta(hours=1)) == 0
        assert fake.texts(AMY)[-1] == "⏰ pick up mom at the airport"
        assert len([t for t in fake.texts(AMY) if t.startswith("⏰")]) == 1

        # The owner's own chat: the prompt holds nothing of Amy's.
        before = len(model.requests)
        script.call("memory_search", '{"query": "mom flight airport"}')
        script.say("Nothing on record.")
        await _say(wa, "when does mom's flight land?", JOHN, "John")
        await _settle(wa, 5)
        for request in model.requests[before:]:
            if request.system == EXTRACTION_PROMPT:
                continue
            seen = request.system + "".join(str(m.get("content")) for m in request.messages)
            assert "Thursday" not in seen and "5 PM" not in seen
        assert wa.lore.memory.active(JOHN_SCOPE, now=clock.now()) == []
        assert wa.lore.config.is_owner_scope(JOHN_SCOPE)  # "+1555…" in config: his chat

        # The conversations have names, beside their keys and last message times.
        async with wa.client() as owner:
            listed = (await owner.get("/api/scopes")).json()
            page = await owner.get("/", params={"scope": JOHN_SCOPE})
        named = {c["scope"]: c for c in listed["conversations"]}
        assert named[AMY_SCOPE]["name"] == "Amy 美美" and named[JOHN_SCOPE]["name"] == "John"
        assert named[AMY_SCOPE]["last_message_at"]
        assert "Amy 美美" in page.text
        async with wa.client(AMY_TOKEN) as amy:
            own = (await amy.get("/api/scopes")).json()
            johns = await amy.get("/api/memories", params={"scope": JOHN_SCOPE})
        assert [c["scope"] for c in own["conversations"]] == [AMY_SCOPE]
        assert johns.status_code == 403

    main(["memory", "list", "--scope", JOHN_SCOPE])
    assert "Thursday" not in capsys.readouterr().out
    # Amy's chat as she saw it is the one docs/channels.md shows.
    said = [
        "remember mom's flight lands Thursday 3 PM",
        "нет, самолёт мамы прилетает в 17:00, не в 15:00",
        "remind me to pick up mom at the airport in 2 hours",
    ]
    answers = fake.texts(AMY)
    chat = [line for pair in zip(said, answers, strict=False) for line in pair]
    lines = [f"Amy 美美: {c}" if n % 2 == 0 else f"Lore: {c}" for n, c in enumerate(chat)]
    lines.append(f"Lore: {answers[-1]}")
    assert "\n".join(lines) + "\n" in docs_text()


async def test_a_burst_of_ten_messages_is_answered_in_order(
    wa_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeGraph
) -> None:
    model.default = lambda request: Step(text=f"ack {request.messages[-1]['content']}")
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        bodies = [
            Notifications.text(f"第{n}条", wa_id=AMY, name="Amy", at=clock.now().timestamp())
            for n in range(10)
        ]
        answers = await asyncio.gather(*(wa.post(body) for body in bodies))
        assert [a.status_code for a in answers] == [200] * 10
        await _settle(wa, 10)
    # Each answers its own message, in the order the messages were recorded.
    said = [m["content"] for m in wa.lore.session(AMY_SCOPE).messages if m["role"] == "user"]
    assert sorted(said) == [f"第{n}条" for n in range(10)]
    assert fake.texts(AMY) == [f"ack {text}" for text in said]


async def test_a_forged_signature_is_refused_and_nothing_is_kept(
    wa_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeGraph
) -> None:
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        body = Notifications.text("remember my PIN is on the fridge", wa_id=AMY, name="Amy")
        forged = await wa.post(body, secret="not-the-app-secret")
        raw = Notifications.encode(body)
        async with wa.client() as owner:  # even with the gateway's token: no signature
            unsigned = await owner.post("/whatsapp/webhook", content=raw)
            checked = await owner.get(
                "/whatsapp/webhook",
                params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN,
                        "hub.challenge": "1158201444"},
            )  # fmt: skip
            refused = await owner.get(
                "/whatsapp/webhook",
                params={"hub.mode": "subscribe", "hub.verify_token": "guess",
                        "hub.challenge": "1158201444"},
            )  # fmt: skip
        assert (forged.status_code, unsigned.status_code) == (401, 401)
        assert "X-Hub-Signature-256" in forged.json()["error"]["message"]
        assert (checked.status_code, checked.text) == (200, "1158201444")
        assert refused.status_code == 403
        await wa.channel.drain()
        key = body["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
        # Nothing recorded: the ledger takes the id as new, and no conversation began.
        assert wa.lore.chat_ledger.receive("whatsapp", key, {}, owner="t", now=clock.now(),
                                           seconds=1)  # fmt: skip
        assert AMY_SCOPE not in wa.lore.sessions.live_keys()
        assert fake.sent == [] and model.requests == []


async def test_a_reminder_outside_the_24_hour_window_fails_where_it_is_seen(
    wa_config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeGraph,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Script()
    model.default = script
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        script.call("set_reminder", '{"text": "renew the passport", "when": "in 30 hours"}')
        script.say("I'll remind you tomorrow.")
        await _say(wa, "remind me to renew the passport in 30 hours", AMY, "Amy")
        await _settle(wa, 1)
        due = clock.now() + timedelta(hours=30, minutes=1)
        assert await _deliver_due(wa, due) == 0  # 30 hours after she wrote: closed
        async with wa.client() as owner:
            page = await owner.get("/", params={"scope": AMY_SCOPE})
        assert "24-hour window" in page.text and "renew the passport" in page.text
    assert not any("passport" in t for t in fake.texts(AMY)[1:])
    main(["remind", "list", "--session", AMY_SCOPE])
    listed = capsys.readouterr().out
    assert "! #1 renew the passport — not delivered yet, retrying after 1 attempt(s)" in listed
    assert "WhatsApp's 24-hour window with +886912345678 is closed" in listed


async def test_graph_refusing_a_closed_window_is_a_visible_failure_too(
    wa_config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeGraph,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Script()
    model.default = script
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        script.call("set_reminder", '{"text": "call grandma", "when": "in 1 hour"}')
        script.say("Will do.")
        await _say(wa, "remind me to call grandma in 1 hour", AMY, "Amy")
        await _settle(wa, 1)
        fake.closed.add(AMY)  # she blocked the number, or Meta counts the window otherwise
        assert await _deliver_due(wa, clock.now() + timedelta(hours=1, minutes=1)) == 0
    main(["remind", "list", "--session", AMY_SCOPE])
    assert "is closed (Graph error 131047)" in capsys.readouterr().out


async def test_status_callbacks_are_recorded_once_and_a_stranger_gets_one_line(
    wa_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeGraph
) -> None:
    async with whatsapp_gateway(wa_config, model, clock, fake) as wa:
        before = METRICS.counters()
        delivered = Notifications.status("status_delivered", message_id="wamid.A", wa_id=AMY)
        failed = Notifications.status("status_failed", message_id="wamid.B", wa_id=AMY)
        for body in (delivered, delivered, failed):
            assert (await wa.post(body)).status_code == 200
        after = METRICS.counters()

        def counted(status: str) -> float:
            key = ("lore_channel_statuses", (("channel", "whatsapp"), ("status", status)))
            return after.get(key, 0.0) - before.get(key, 0.0)

        assert (counted("delivered"), counted("failed")) == (1.0, 1.0)
        ledger = wa.lore.chat_ledger
        assert not ledger.receive("whatsapp", "status:wamid.A:delivered", {}, owner="t",
                                  now=clock.now(), seconds=1)  # fmt: skip

        await _say(wa, "привет, кто ты?", ZOE, "Zoe")
        [refusal] = await _settle(wa, 1)
        assert refusal["to"] == ZOE and refusal["text"].startswith("This assistant is private")
        assert f"whatsapp:{ZOE}" not in wa.lore.sessions.live_keys()
        assert model.requests == []
