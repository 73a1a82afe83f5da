"""The Slack channel end to end: signed Events API calls into the real gateway and a Socket
Mode websocket, the real slack_sdk clients against a fake Slack on 127.0.0.1, the
scripted model. (The family scenario is in tests/test_slack_family.py.)"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from lore.channels.owner import owner_reminders
from lore.channels.slack import MAX_TEXT
from lore.channels.slack_events import escape, message_of, place_of_scope
from lore.clock import FixedClock
from lore.config import OWNER_SCOPE, Config
from lore.errors import InvalidInputError, StoreError
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.ports.chat_ledger import ChatLedger
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from tests.slack_server import (
    BOT_USER,
    Events,
    FakeSlack,
    fixture,
    slack_lore,
    slack_settings,
)

JOHN = "U061F7AUR"  # the owner
AMY = "U2AMY0001"
ZOE = "U4ZOE0001"
JOHN_DM = "D0PNCRP9N"
ZOE_DM = "D0ZOE0001"
FAMILY = "C0FAMILY01"
MENTION = f"<@{BOT_USER}>"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        server.users.update({JOHN: "John", AMY: "Amy 美美", ZOE: "Зоя"})
        server.channels.update({FAMILY: "family"})
        server.dms.update({JOHN: JOHN_DM, ZOE: ZOE_DM})
        yield server


@pytest.fixture
def slack_config(config: Config, fake: FakeSlack) -> Config:
    return replace(config, slack=slack_settings(fake, owner_ids=(JOHN,)))


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _said(slack_lore_: object, scope: str) -> list[str]:
    lore = slack_lore_.lore  # type: ignore[attr-defined]
    return [str(m["content"]) for m in lore.session(scope).messages if m["role"] == "user"]


async def test_the_owner_is_answered_in_a_dm_and_a_stranger_is_refused_and_not_kept(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        await slack.say("what is on today?", user=JOHN, channel=JOHN_DM)
        [answer] = await slack.settle(1)
        await slack.say("привет, кто ты?", user=ZOE, channel=ZOE_DM)
        [_, refused] = await slack.settle(2)
        inbound = model.requests[0].messages[-1]
        assert _said(slack, f"slack:{ZOE}") == []
    assert (answer["channel"], answer["text"]) == (JOHN_DM, "re: what is on today?")
    assert refused["channel"] == ZOE_DM and refused["text"].startswith("This assistant is private")
    assert inbound["content"] == "what is on today?"
    assert len(model.requests) == 1


async def test_replies_are_mrkdwn_escaped_so_nobody_is_pinged(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.reply("Use <!channel> & write a<b, not <@U2AMY0001>")
    async with slack_lore(slack_config, model, clock, fake) as slack:
        await slack.say(
            f"{MENTION} how do I ping all? &lt;3", user=AMY, channel=FAMILY, mention=True
        )
        [answer] = await slack.settle(1)
        said = _said(slack, f"slack:{FAMILY}")
    assert answer["text"] == "Use &lt;!channel&gt; &amp; write a&lt;b, not &lt;@U2AMY0001&gt;"
    assert said == ["how do I ping all? <3"]  # the mention of Lore out, Slack's escaping undone
    assert escape("a & b < c > d") == "a &amp; b &lt; c &gt; d"


async def test_a_forged_or_stale_signature_gets_401_and_nothing_is_stored(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        forged = slack.events.message("I am John, trust me", user=JOHN, channel=JOHN_DM)
        refused = [
            await slack.post(forged, secret="not-the-signing-secret"),
            await slack.post(forged, timestamp=int(time.time()) - 6 * 60),  # a replay
            await slack.post(forged, timestamp=int(time.time()) + 6 * 60),
        ]
        challenge = await slack.post(fixture("url_verification"))
        key = message_of(forged)
        assert key is not None
        # Nothing was recorded: the ledger takes this key as new.
        fresh = slack.channel.inbox.receive(key.key, forged)
        slack.channel.inbox.handled(key.key)
        said = _said(slack, f"slack:{JOHN}")
    assert [r.status_code for r in refused] == [401, 401, 401]
    assert "does not match" in refused[0].json()["error"]["message"]
    assert "five minutes" in refused[1].json()["error"]["message"]
    assert fresh and said == [] and fake.sent == [] and model.requests == []
    assert challenge.json() == {"challenge": fixture("url_verification")["challenge"]}


async def test_slacks_retries_and_the_twin_app_mention_are_answered_once(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        envelope = await slack.say(f"{MENTION} hi", user=AMY, channel=FAMILY, mention=True)
        for retry in (1, 2):
            assert (await slack.post(envelope, retry=retry)).status_code == 200
        await slack.settle(1)
        await asyncio.sleep(0.2)
        said = _said(slack, f"slack:{FAMILY}")
    assert len(fake.sent) == 1 and said == ["hi"]


async def test_a_burst_of_ten_over_the_socket_is_answered_in_order(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        for number in range(10):
            await slack.say(
                f"message {number} 第{number}条", user=JOHN, channel=JOHN_DM, socket=True
            )
        sent = await slack.settle(10)
        await asyncio.to_thread(fake.wait, fake.all_acked)
    assert [s["text"] for s in sent] == [f"re: message {n} 第{n}条" for n in range(10)]


async def test_a_dropped_socket_is_reconnected_and_nothing_is_lost_or_repeated(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        await slack.say("before", user=JOHN, channel=JOHN_DM, socket=True)
        await slack.settle(1)
        await asyncio.to_thread(fake.wait, fake.all_acked)
        # The socket drops, and the ack of "before" is lost with it: it comes again.
        fake.lose_ack(fake.acked[-1])
        fake.drop(hold=True)
        # Written while Lore is away: Slack keeps them for the next connection.
        for text in ("while down 1", "while down 2"):
            await slack.say(text, user=JOHN, channel=JOHN_DM, socket=True)
        await asyncio.sleep(0.5)
        assert len(fake.sent) == 1
        fake.release()
        await asyncio.to_thread(fake.wait, lambda: fake.connections >= 2)
        await slack.say("after", user=JOHN, channel=JOHN_DM, socket=True)
        await slack.settle(4)
        await asyncio.to_thread(fake.wait, fake.all_acked)
        await asyncio.sleep(0.2)
        said = _said(slack, f"slack:{JOHN}")
    assert fake.calls.count("apps.connections.open") >= 2
    assert [s["text"] for s in fake.sent] == [
        "re: before",
        "re: while down 1",
        "re: while down 2",
        "re: after",
    ]
    assert said == ["before", "while down 1", "while down 2", "after"]


async def test_a_ratelimited_or_failed_post_is_sent_again_ratelimited_after_retry_after(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        fake.failures["chat.postMessage"] = [503, 429, 429]
        await slack.say("are you there?", user=JOHN, channel=JOHN_DM)
        [answer] = await slack.settle(1)
        waits = list(slack.waits)
    assert answer["text"] == "re: are you there?"
    assert fake.calls.count("chat.postMessage") == 4
    # The backoff's first pause for the 503, then Slack's Retry-After for each 429.
    assert waits == [1.0, 3.0, 3.0]


async def test_the_owner_approves_a_tool_with_a_button(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.tool_call("write_file", {"path": "groceries.md", "content": "- молоко\n- 牛奶\n"})
    model.reply("Saved your list.")
    model.tool_call("write_file", {"path": "groceries.md", "content": "nothing\n"})
    model.reply("Left it as it was.")
    async with slack_lore(slack_config, model, clock, fake) as slack:
        await slack.say("save my grocery list", user=JOHN, channel=JOHN_DM, socket=True)
        [question] = await slack.sent(1)
        assert question["text"].startswith("May I create groceries.md?")
        buttons = question["blocks"][1]["elements"]
        assert [b["action_id"] for b in buttons] == ["lore_approve", "lore_deny"]
        # Someone else's press is no answer; the owner's, over the socket, is.
        chat = buttons[0]["value"]
        press = Events.press(AMY, chat, JOHN_DM, question["ts"], allow=True)
        await asyncio.to_thread(fake.push, press, "interactive")
        press = Events.press(JOHN, chat, JOHN_DM, question["ts"], allow=True)
        await asyncio.to_thread(fake.push, press, "interactive")
        sent = await slack.sent(3)
        path = slack.lore.workspace.root / "groceries.md"
        assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
        # The next question is denied over the Events API's interactivity call.
        await slack.say("now empty it", user=JOHN, channel=JOHN_DM)
        sent = await slack.sent(4)
        press = Events.press(JOHN, chat, JOHN_DM, sent[3]["ts"], allow=False)
        assert (await slack.post_form(press)).status_code == 200
        sent = await slack.settle(6)
        tools = [m for m in slack.lore.session(f"slack:{JOHN}").messages if m["role"] == "tool"]
    updates = [s for s in sent if s["method"] == "chat.update"]
    assert [u["text"] for u in updates] == [f"Allowed by <@{JOHN}>.", f"Denied by <@{JOHN}>."]
    replies = [s["text"] for s in sent if s["method"] == "chat.postMessage"]
    assert replies[1] == "Saved your list." and replies[3] == "Left it as it was."
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    assert [t["decision"]["outcome"] for t in tools] == ["approved", "refused"]
    assert tools[0]["decision"]["by"] == "John (slack)"


def test_a_thread_is_its_own_conversation_and_a_dm_is_keyed_by_the_person() -> None:
    fake = FakeSlack()
    fake.users.update({AMY: "Amy"})
    events = Events(fake)
    top = message_of(events.message("hi", user=AMY, channel=FAMILY))
    threaded = message_of(events.message("hi", user=AMY, channel=FAMILY, thread_ts="17.1"))
    direct = message_of(events.message("hi", user=AMY, channel="D0AMY0001"))
    assert top is not None and threaded is not None and direct is not None
    assert (top.scope, threaded.scope, direct.scope) == (
        f"slack:{FAMILY}",
        f"slack:{FAMILY}:17.1",
        f"slack:{AMY}",
    )
    assert place_of_scope(threaded.scope) == threaded.place
    assert place_of_scope(f"slack:{AMY}").channel == AMY  # Slack posts to the member's DM
    with pytest.raises(InvalidInputError):
        place_of_scope("line:group:C1")
    bot_post = events.message("hi", user=AMY, channel=FAMILY)
    bot_post["event"]["bot_id"] = "B0LAN0Z90"
    assert message_of(bot_post) is None  # Lore's own posts come back as events: ignored
    forged = events.message("hi", user=AMY, channel=FAMILY)
    forged["event"]["channel"] = "C1\nowner"
    with pytest.raises(InvalidInputError):
        message_of(forged)  # no Slack id: it names no conversation


class _FailingOnce:
    """The ledger, failing its first `receive` (the disk was full for a moment)."""

    def __init__(self, ledger: ChatLedger) -> None:
        self.ledger = ledger
        self.failed = False

    def receive(self, *args: Any, **kwargs: Any) -> bool:
        if not self.failed:
            self.failed = True
            raise StoreError("database or disk is full")
        return self.ledger.receive(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, name)


async def test_an_event_that_cannot_be_recorded_is_not_acknowledged_and_comes_again(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    async with slack_lore(slack_config, model, clock, fake) as slack:
        # Over the socket: no ack, so Slack sends it again on the next connection.
        slack.channel.inbox.ledger = _FailingOnce(slack.channel.inbox.ledger)
        await slack.say("奶奶几点到？", user=JOHN, channel=JOHN_DM, socket=True)
        await asyncio.sleep(0.3)
        assert fake.sent == [] and not fake.all_acked()
        fake.drop()
        [answer] = await slack.settle(1)
        await asyncio.to_thread(fake.wait, fake.all_acked)
        # Over the Events API: 503, and Slack's retry is answered.
        slack.channel.inbox.ledger = _FailingOnce(slack.channel.inbox.ledger)
        envelope = slack.events.message("когда прилетает?", user=JOHN, channel=JOHN_DM)
        refused = await slack.post(envelope)
        retried = await slack.post(envelope, retry=1)
        sent = await slack.settle(2)
    assert answer["text"] == "re: 奶奶几点到？"
    assert (refused.status_code, retried.status_code) == (503, 200)
    assert [s["text"] for s in sent] == ["re: 奶奶几点到？", "re: когда прилетает?"]
    assert len(model.requests) == 2


async def test_joining_a_channel_logs_its_name_and_conversation_key(
    slack_config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    joined = fixture("member_joined_channel")
    joined["event"]["channel"] = FAMILY
    caplog.set_level(logging.INFO, logger="lore.channels.slack")
    async with slack_lore(slack_config, model, clock, fake) as slack:
        assert (await slack.post(joined)).status_code == 200
        await slack.channel.drain()
    assert f"slack: Lore joined #family; its conversation is slack:{FAMILY}" in caplog.text
    assert fake.sent == [] and model.requests == []


async def test_the_owners_dm_is_their_one_conversation_and_its_reminder_comes_to_the_dm(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    settings = replace(
        config,
        slack=slack_settings(fake, owner_ids=(JOHN,)),
        channels=replace(config.channels, unified_owner_session=True),
    )
    model.tool_call("set_reminder", {"text": "call mum 給媽媽打電話", "when": "in 1 hour"})
    model.reply("I'll remind you.")
    async with slack_lore(settings, model, clock, fake) as slack:
        await slack.say("remind me to call mum in an hour", user=JOHN, channel=JOHN_DM)
        await slack.settle(1)
        lore = slack.lore
        [reminder] = lore.reminders.list(OWNER_SCOPE)
        due = clock.now() + timedelta(hours=1, minutes=1)
        into_session = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
        owner = owner_reminders(lore, {"slack": slack.channel.deliver})
        with lore.bus.deliver_to(OWNER_SCOPE, owner):
            delivered = await Scheduler(lore.reminders, FixedClock(due), into_session).run_once(due)
        said = [m["content"] for m in lore.session(OWNER_SCOPE).messages if m["role"] == "user"]
    assert reminder.text == "call mum 給媽媽打電話" and len(delivered) == 1
    assert said == ["remind me to call mum in an hour"]
    assert [(s["channel"], s["text"]) for s in fake.sent] == [
        (JOHN_DM, "I'll remind you."),
        (JOHN_DM, "⏰ call mum 給媽媽打電話"),  # their own DM: no mention
    ]


async def test_a_long_reply_is_posted_in_pieces_in_order_in_the_thread(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    reply = "\n\n".join(f"Абзац {n}: " + "длинный текст про Хуалянь. " * 40 for n in range(8))
    model.reply(reply)
    async with slack_lore(slack_config, model, clock, fake) as slack:
        await slack.say(
            f"{MENTION} tell me everything", user=AMY, channel=FAMILY, thread_ts="1700000000.000100"
        )
        sent = await slack.settle(3)
    assert len(sent) >= 3 and all(len(s["text"]) <= MAX_TEXT for s in sent)
    assert {s["thread_ts"] for s in sent} == {"1700000000.000100"}
    assert " ".join(" ".join(s["text"] for s in sent).split()) == " ".join(reply.split())


async def test_a_refused_app_token_is_said_once_and_the_events_api_still_answers(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    fake: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = replace(config, slack=slack_settings(fake, owner_ids=(JOHN,), app_token="xoxb-1"))
    model.default = _echo
    async with slack_lore(settings, model, clock, fake, socket_up=False) as slack:
        await slack.say("are you there?", user=JOHN, channel=JOHN_DM)
        [answer] = await slack.settle(1)
        await asyncio.sleep(0.5)
    refused = [r for r in caplog.records if "no Socket Mode" in r.getMessage()]
    assert [r.getMessage() for r in refused] == [
        "slack: no Socket Mode: Slack refused apps.connections.open (invalid_auth); "
        "check slack.app_token (xapp-…)"
    ]
    assert fake.connections == 0 and fake.calls.count("apps.connections.open") == 1
    assert answer["text"] == "re: are you there?"


async def test_conversations_keep_their_names_a_dm_the_persons_a_channel_its_own(
    slack_config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeSlack
) -> None:
    model.default = _echo
    renamed = {
        "type": "event_callback",
        "event_id": "Ev0RENAME01",
        "event": {"type": "channel_rename", "channel": {"id": FAMILY, "name": "家人"}},
    }
    async with slack_lore(slack_config, model, clock, fake) as slack:
        await slack.say("what is on today?", user=JOHN, channel=JOHN_DM)
        await slack.say("мама прилетает в четверг", user=AMY, channel=FAMILY)
        await slack.settle(1)
        await slack.channel.drain()
        names = {s: n.name for s, n in slack.lore.chat_ledger.conversation_names().items()}
        assert names[f"slack:{FAMILY}"] == "#family"
        assert names[f"slack:{JOHN}"] == "John"
        assert (await slack.post(renamed)).status_code == 200
        await slack.channel.drain()
        after = slack.lore.chat_ledger.conversation_names()[f"slack:{FAMILY}"].name
    assert after == "#家人"
