"""LINE, end to end: signed webhook calls into the real gateway, the real line-bot-sdk client
against a fake Messaging API on 127.0.0.1, the scripted model behind Lore."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.channels.line import INTRO, SORRY, STRANGER
from lore.cli import main
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.errors import ConfigError
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider, Step
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from tests.line_server import (
    OWNER_TOKEN,
    SECRET,
    TOKEN,
    FakeLine,
    Webhooks,
    line_gateway,
    line_settings,
    sign,
)
from tests.line_server import LineGateway as Line

JOHN = "U1111111111111111111111111111111a"
MOM = "U2222222222222222222222222222222b"
EVE = "U9999999999999999999999999999999e"
FAMILY = "C0000000000000000000000000000f4m1"
ROOM = "R0000000000000000000000000000r00m"


@pytest.fixture
def fake() -> Iterator[FakeLine]:
    with FakeLine() as server:
        server.profiles.update({JOHN: "John", MOM: "Mom 媽媽", EVE: "Eve"})
        yield server


def _config(config: Config, fake: FakeLine, **changes: Any) -> Config:
    return replace(config, line=line_settings(fake, owner_ids=(JOHN,), **changes))


@pytest.fixture
async def line(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> AsyncIterator[Line]:
    async with line_gateway(_config(config, fake), model, clock, fake) as running:
        yield running


def _echo(request: ChatRequest) -> Step:
    return Step(text=f"re: {request.messages[-1]['content']}")


def _texts(sent: dict[str, Any]) -> list[str]:
    return [m["text"] for m in sent["messages"]]


async def test_the_owner_talks_to_lore_in_a_private_chat(
    line: Line, model: ScriptedProvider
) -> None:
    model.reply("東京。")
    await line.say("What is the capital of Japan?", user=JOHN)
    [sent] = await line.sent(1)
    assert sent["kind"] == "reply" and sent["to"] == JOHN and _texts(sent) == ["東京。"]
    user, reply = line.lore.session(f"line:user:{JOHN}").messages
    assert (user["author"], user["author_id"], user["channel"]) == ("John", JOHN, "line")
    assert reply["content"] == "東京。"
    assert line.lore.config.is_owner_scope(f"line:user:{JOHN}")
    assert not line.lore.config.is_owner_scope(f"line:group:{FAMILY}")


async def test_a_stranger_in_a_private_chat_gets_one_line_and_nothing_is_kept(
    line: Line, model: ScriptedProvider
) -> None:
    await line.say("hi, who are you?", user=EVE)
    [sent] = await line.sent(1)
    assert _texts(sent) == [STRANGER]
    assert line.lore.session(f"line:user:{EVE}").messages == []
    assert model.requests == []


async def test_someone_on_the_allow_list_talks_as_a_guest(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    model.respond_with(_echo)
    async with line_gateway(_config(config, fake, allow=(EVE,)), model, clock, fake) as line:
        await line.say("Привет!", user=EVE)
        [sent] = await line.sent(1)
    assert _texts(sent) == ["re: Привет!"]
    offered = {spec.name for spec in model.requests[0].tools}
    assert offered.isdisjoint({"read_file", "write_file", "exec"})


async def test_a_missing_or_forged_signature_gets_400_and_nothing_is_kept(
    line: Line, model: ScriptedProvider
) -> None:
    event = line.hooks.text("remember the door code", user=JOHN)
    forged = await line.post(event, secret="not-the-channel-secret")
    assert forged.status_code == 400
    assert "X-Line-Signature" in forged.json()["error"]["message"]
    body = Webhooks.body(event)
    async with httpx.AsyncClient(base_url=line.url) as client:
        unsigned = await client.post("/line/webhook", content=body)
        tampered = await client.post(
            "/line/webhook",
            content=body.replace(b"door", b"safe"),
            headers={"X-Line-Signature": sign(body)},
        )
        huge = b'{"events": [], "padding": "' + b"x" * 2_000_000 + b'"}'
        oversize = await client.post(
            "/line/webhook", content=huge, headers={"X-Line-Signature": sign(huge)}
        )
    assert (unsigned.status_code, tampered.status_code, oversize.status_code) == (400, 400, 400)
    await asyncio.sleep(0.2)
    assert line.fake.sent == [] and model.requests == []
    assert line.lore.session(f"line:user:{JOHN}").messages == []


async def test_in_a_group_lore_answers_when_addressed_and_otherwise_only_listens(
    line: Line, model: ScriptedProvider
) -> None:
    model.default = _echo
    await line.say("Grandma lands at 3 PM on Thursday", user=MOM, group=FAMILY)
    await line.say("@Lore when does grandma land?", user=JOHN, group=FAMILY, mention_bot=True)
    [sent] = await line.sent(1)
    assert sent["kind"] == "reply" and sent["to"] == FAMILY
    assert _texts(sent) == ["re: when does grandma land?"]
    assert sent["messages"][0]["quoteToken"]  # the answer quotes the question
    [request] = model.requests
    assert [m["content"] for m in request.messages] == [
        "Grandma lands at 3 PM on Thursday",
        "when does grandma land?",
    ]
    assert "Speaking: John" in request.system
    # A reply quoting Lore's answer is addressed to Lore; so is its name.
    await line.say("thanks!", user=MOM, group=FAMILY, quoted=sent["ids"][0])
    await line.say("lore, and the hotel?", user=MOM, group=FAMILY)
    await line.say("explore the city later", user=MOM, group=FAMILY)
    await line.sent(3)
    await line.channel.drain()
    authors = [m.get("author") for m in line.lore.session(f"line:group:{FAMILY}").messages]
    assert authors == ["Mom 媽媽", "John", None, "Mom 媽媽", None, "Mom 媽媽", None, "Mom 媽媽"]
    assert len(line.fake.sent) == 3
    await line.say("/help", user=MOM, group=FAMILY)  # a command is addressed to Lore too
    [*_, commands] = await line.sent(4)
    assert commands["to"] == FAMILY and "/" in _texts(commands)[0]


async def test_a_room_is_a_conversation_of_its_own(line: Line, model: ScriptedProvider) -> None:
    model.default = _echo
    await line.say("Lore, hello from the room", user=MOM, room=ROOM)
    [sent] = await line.sent(1)
    assert sent["to"] == ROOM
    [said, _] = line.lore.session(f"line:room:{ROOM}").messages
    assert said["author"] == "Mom 媽媽" and said["content"] == "Lore, hello from the room"


async def test_a_burst_in_one_group_is_answered_in_order(
    line: Line, model: ScriptedProvider
) -> None:
    model.default = _echo
    events = [
        line.hooks.text(
            f"@Lore question {n}", user=MOM if n % 2 else JOHN, group=FAMILY, mention_bot=True
        )
        for n in range(10)
    ]
    async with httpx.AsyncClient(base_url=line.url, timeout=30) as client:
        for event in events:  # ten calls within a second, as LINE makes them
            body = Webhooks.body(event)
            answer = await client.post(
                "/line/webhook", content=body, headers={"X-Line-Signature": sign(body)}
            )
            assert answer.status_code == 200
    sent = await line.sent(10)
    assert [_texts(s)[0] for s in sent] == [f"re: question {n}" for n in range(10)]


async def test_a_stale_reply_token_falls_back_to_push(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    ticks = itertools.chain([0.0, 0.0], itertools.repeat(120.0))  # the turn took 2 minutes
    model.reply("Sorry for the wait: 42.")
    async with line_gateway(
        _config(config, fake), model, clock, fake, monotonic=lambda: next(ticks)
    ) as line:
        await line.say("what is the answer?", user=JOHN)
        [sent] = await line.sent(1)
    assert sent["kind"] == "push" and sent["to"] == JOHN
    assert _texts(sent) == ["Sorry for the wait: 42."]


async def test_a_refused_reply_token_falls_back_to_push_and_rate_limits_are_retried(
    line: Line, model: ScriptedProvider
) -> None:
    line.fake.fail("reply", 400)
    line.fake.fail("push", 429, 503)
    model.reply("Here.")
    await line.say("are you there?", user=JOHN)
    [sent] = await line.sent(1)
    assert sent["kind"] == "push" and _texts(sent) == ["Here."]
    assert line.fake.calls.count("POST /v2/bot/message/push") == 3


async def test_a_long_answer_goes_out_in_pieces_within_lines_limits(
    line: Line, model: ScriptedProvider
) -> None:
    paragraph = "長い段落です。" * 400  # 2,800 characters: two do not fit in one message
    model.reply("\n\n".join([paragraph] * 7))
    await line.say("tell me everything", user=JOHN)
    reply, push = await line.sent(2)
    # Five messages are all one reply may carry; the rest follow by push.
    assert (reply["kind"], len(reply["messages"])) == ("reply", 5)
    assert (push["kind"], len(push["messages"])) == ("push", 2)
    assert _texts(reply) + _texts(push) == [paragraph] * 7


async def test_the_speakers_name_is_asked_once_and_cached(
    line: Line, model: ScriptedProvider
) -> None:
    for n in range(3):
        await line.say(f"note {n}", user=MOM, group=FAMILY)
    await line.channel.drain()
    asks = [c for c in line.fake.calls if c.endswith(f"/member/{MOM}")]
    assert len(asks) == 1


async def test_follow_greets_the_owner_and_refuses_a_stranger(line: Line) -> None:
    await line.post(line.hooks.event("follow", userId=JOHN))
    await line.post(line.hooks.event("follow", userId=EVE))
    sent = await line.sent(2)
    by_whom = {s["to"]: _texts(s)[0] for s in sent}
    assert by_whom[JOHN].startswith("Hi John, I'm Lore.")
    assert by_whom[EVE] == STRANGER


async def test_join_introduces_lore_and_leave_keeps_the_groups_data(
    line: Line, model: ScriptedProvider, caplog: pytest.LogCaptureFixture
) -> None:
    await line.post(line.hooks.event("join", groupId=FAMILY))
    [intro] = await line.sent(1)
    assert intro["to"] == FAMILY and _texts(intro) == [INTRO.format(bot="Lore")]
    model.tool_call("remember", {"content": "Grandma's flight lands Thursday 3 PM"}).reply("Noted.")
    await line.say(
        "@Lore remember grandma's flight lands Thursday 3 PM",
        user=MOM,
        group=FAMILY,
        mention_bot=True,
    )
    await line.sent(2)
    with caplog.at_level(logging.INFO, logger="lore.channels.line"):
        await line.post(line.hooks.event("leave", groupId=FAMILY))
    assert f"lore memory forget --all --scope line:group:{FAMILY}" in caplog.text
    [kept] = line.lore.memory.active(f"line:group:{FAMILY}", now=line.lore.clock.now())
    assert kept.content == "Grandma's flight lands Thursday 3 PM" and kept.author == "Mom 媽媽"
    # The owner erases the group's memories when they choose to.
    assert main(["memory", "forget", "--all", "--scope", f"line:group:{FAMILY}"]) == 0
    assert line.lore.memory.active(f"line:group:{FAMILY}", now=line.lore.clock.now()) == []


async def test_lore_joining_a_group_logs_its_name_and_key_and_conversations_keep_names(
    line: Line, model: ScriptedProvider, fake: FakeLine, caplog: pytest.LogCaptureFixture
) -> None:
    fake.groups[FAMILY] = "王家 family"
    with caplog.at_level(logging.INFO, logger="lore.channels.names"):
        await line.post(line.hooks.event("join", groupId=FAMILY))
        await line.sent(1)
        await line.channel.drain()
    assert f"line: Lore joined '王家 family' as line:group:{FAMILY}" in caplog.text
    model.default = _echo
    await line.say("hi", user=JOHN)
    await line.say("@Lore привет", user=MOM, group=FAMILY, mention_bot=True)
    await line.sent(3)
    await line.channel.drain()
    names = line.lore.chat_ledger.conversation_names()
    assert names[f"line:group:{FAMILY}"].name == "王家 family"
    assert names[f"line:user:{JOHN}"].name == "John"
    # The summary is asked when Lore joins, then at most once a day: not per message.
    summaries = [c for c in fake.calls if c.endswith(f"/group/{FAMILY}/summary")]
    assert len(summaries) == 1


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["7", "--all"], "give no ID"),
        (["--all", "--everywhere"], "give no ID and no --everywhere"),
        ([], "or --all"),
    ],
)
def test_forgetting_a_whole_scope_takes_all_and_nothing_else(
    args: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "forget", *args]) != 0
    assert problem in capsys.readouterr().err


async def test_a_redelivered_event_is_handled_once(line: Line, model: ScriptedProvider) -> None:
    model.default = _echo
    event = line.hooks.text("only once", user=JOHN)
    await line.post(event)
    redelivered = dict(event, deliveryContext={"isRedelivery": True})
    await line.post(redelivered)
    await line.sent(1)
    await line.channel.drain()
    assert len(line.fake.sent) == 1 and len(model.requests) == 1


async def test_a_reminder_is_pushed_to_the_group_with_a_real_mention_once(
    line: Line, model: ScriptedProvider
) -> None:
    model.tool_call("set_reminder", {"text": "call grandma {now}", "when": "in 10 minutes"})
    model.reply("I'll remind you.")
    await line.say(
        "@Lore remind me to call grandma in 10 minutes", user=MOM, group=FAMILY, mention_bot=True
    )
    await line.sent(1)
    lore = line.lore
    deliver = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
    later = lore.clock.now() + timedelta(minutes=11)
    with lore.bus.deliver_for("line", line.channel.deliver):
        scheduler = Scheduler(lore.reminders, FixedClock(later), deliver)
        assert len(await scheduler.run_once(later)) == 1
        assert await scheduler.run_once(later + timedelta(minutes=5)) == []
    push = (await line.sent(2))[1]
    assert push["kind"] == "push" and push["to"] == FAMILY and push["retry_key"]
    [message] = push["messages"]
    assert message["type"] == "textV2"
    assert message["text"] == "⏰ Reminder for {user}: call grandma {{now}}"
    mention = message["substitution"]["user"]
    assert mention == {"type": "mention", "mentionee": {"type": "user", "userId": MOM}}
    assert len(line.fake.wait_sent(3, timeout=1)) == 2  # delivered once


async def test_an_undeliverable_reminder_is_retried_then_shown_as_failed(
    line: Line, model: ScriptedProvider
) -> None:
    from lore.ports.outbox import MAX_ATTEMPTS

    model.tool_call("set_reminder", {"text": "water the plants", "when": "in 1 minute"})
    model.reply("OK.")
    await line.say("remind me to water the plants in a minute", user=JOHN)
    await line.sent(1)
    line.fake.fail("push", *([429] * 4 * MAX_ATTEMPTS))  # the month's quota is used up
    lore = line.lore
    deliver = session_delivery(lore.sessions, lore.bus.route, lore.bus.deliverer)
    when = lore.clock.now() + timedelta(minutes=2)
    with lore.bus.deliver_for("line", line.channel.deliver):
        scheduler = Scheduler(lore.reminders, FixedClock(when), deliver)
        for _ in range(MAX_ATTEMPTS):
            assert await scheduler.run_once(when) == []
            when += timedelta(hours=2)
    [item] = lore.outbox.items(f"line:user:{JOHN}")
    assert item.status == "failed" and "429" in item.last_error
    assert len(line.fake.sent) == 1
    # Shown as failed where the owner looks: the REST API and the web page.
    async with line.client(OWNER_TOKEN) as client:
        listed = (await client.get("/api/reminders", params={"scope": f"line:user:{JOHN}"})).json()
        page = (await client.get("/", params={"scope": f"line:user:{JOHN}"})).text
    [undelivered] = listed["undelivered"]
    assert undelivered["status"] == "failed" and undelivered["text"] == "water the plants"
    assert "water the plants — failed after 8 attempt(s)" in page


async def test_the_owner_approves_a_tool_by_replying_in_the_chat(
    line: Line, model: ScriptedProvider
) -> None:
    model.tool_call("write_file", {"path": "groceries.md", "content": "- молоко\n- 牛奶\n"})
    model.reply("Saved your list.")
    model.tool_call("write_file", {"path": "groceries.md", "content": "nothing\n"})
    model.reply("Left it as it was.")
    await line.say("save my grocery list", user=JOHN)
    [question] = await line.sent(1)
    assert question["kind"] == "push"  # the reply token waits for the answer itself
    assert _texts(question)[0].startswith("May I create groceries.md?")
    assert "+- 牛奶" in _texts(question)[0]
    await line.say("yes", user=JOHN)
    sent = await line.sent(2)
    assert _texts(sent[1]) == ["Saved your list."]
    path = line.lore.workspace.root / "groceries.md"
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    await line.say("now empty it", user=JOHN)
    await line.sent(3)
    await line.say("no", user=JOHN)
    sent = await line.sent(4)
    assert _texts(sent[3]) == ["Left it as it was."]
    assert path.read_text(encoding="utf-8") == "- молоко\n- 牛奶\n"
    messages = line.lore.session(f"line:user:{JOHN}").messages
    tools = [m for m in messages if m["role"] == "tool"]
    assert [t["decision"]["outcome"] for t in tools] == ["approved", "refused"]
    assert tools[0]["decision"]["by"] == "John (line)"
    said = [m["content"] for m in messages if m["role"] == "user"]
    assert said == ["save my grocery list", "now empty it"]  # the answers are not messages


async def test_a_group_members_turn_offers_no_file_or_shell_tools(
    line: Line, model: ScriptedProvider
) -> None:
    model.respond_with(_echo)
    await line.say("@Lore hello", user=MOM, group=FAMILY, mention_bot=True)
    await line.sent(1)
    offered = {spec.name for spec in model.requests[0].tools}
    assert offered.isdisjoint({"read_file", "write_file", "exec"})


async def test_the_consoles_verify_call_is_answered(line: Line) -> None:
    answer = await line.post()  # LINE's "Verify": no events, signed all the same
    assert answer.status_code == 200 and answer.json() == {}


async def test_a_configured_name_addresses_lore_in_a_group(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeLine
) -> None:
    model.default = _echo
    settings = _config(config, fake, names=("小助手", "Lorita"))
    async with line_gateway(settings, model, clock, fake) as line:
        await line.say("小助手，奶奶的航班几点到？", user=MOM, group=FAMILY)
        await line.say("Lore is not its name here", user=MOM, group=FAMILY)
        await line.say("lorita: и когда обратный рейс?", user=MOM, group=FAMILY)
        sent = await line.sent(2)
        await line.channel.drain()
    assert [_texts(s)[0] for s in sent] == [
        "re: 小助手，奶奶的航班几点到？",
        "re: lorita: и когда обратный рейс?",
    ]
    assert len(fake.sent) == 2


def test_line_is_configured_from_the_environment_and_its_secrets_are_masked(
    home: Path,
) -> None:
    env = {
        "LORE_HOME": str(home),
        "LINE_CHANNEL_SECRET": "3f1c0a5e9b7d2c4e6f8a0b1c2d3e4f5a",
        "LINE_CHANNEL_ACCESS_TOKEN": "long-lived-token-0123456789",
    }
    loaded = load_config(env=env)
    assert loaded.line.enabled
    shown = loaded.redacted()["line"]
    assert shown["channel_secret"] == "3f1…4f5a" and shown["access_token"] == "lon…6789"


def test_half_a_line_configuration_is_one_clear_error(home: Path) -> None:
    env = {"LORE_HOME": str(home), "LINE_CHANNEL_SECRET": "3f1c0a5e9b7d2c4e6f8a0b1c2d3e4f5a"}
    with pytest.raises(ConfigError, match="'line.access_token'"):
        load_config(env=env)


def test_lore_serve_once_pushes_a_due_line_reminder(
    home: Path,
    fake: FakeLine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from datetime import UTC, datetime

    from lore.backends.local.database import Database
    from lore.backends.local.reminders import SQLiteReminderStore

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[line]\napi_base_url = "{fake.base_url}"\n', encoding="utf-8"
    )
    monkeypatch.setenv("LINE_CHANNEL_SECRET", SECRET)
    monkeypatch.setenv("LINE_CHANNEL_ACCESS_TOKEN", TOKEN)
    now = datetime.now(UTC)
    db = Database(home / "lore.db")
    SQLiteReminderStore(db).add(f"line:group:{FAMILY}", "Mom", "call grandma",
                                now - timedelta(minutes=1), timezone="Asia/Taipei",
                                now=now - timedelta(minutes=10))  # fmt: skip
    db.close()
    assert main(["serve", "--once"]) == 0
    assert main(["serve", "--once"]) == 0
    [push] = fake.sent
    assert (push["kind"], push["to"]) == ("push", FAMILY)
    assert _texts(push) == ["⏰ Reminder for @Mom: call grandma"]
    assert f"delivered reminder #1 to line:group:{FAMILY}" in capsys.readouterr().out


async def test_a_late_reminder_says_so_and_one_in_a_private_chat_needs_no_mention(
    line: Line,
) -> None:
    from datetime import UTC, datetime

    from lore.ports.outbox import OutboxItem, ReminderPayload
    from lore.reminders.delivery import Delivery

    def due(scope: str, late: bool) -> Delivery:
        payload = ReminderPayload(7, "стирка", "John", datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
                                  late=late)  # fmt: skip
        created = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
        return Delivery(
            OutboxItem(0, f"r7@{late}", scope, "line", "reminder", payload, "pending", 0, created),
            created,
        )

    await line.channel.deliver(due(f"line:user:{JOHN}", late=True))
    await line.channel.deliver(due(f"line:group:{FAMILY}", late=False))
    private, group = await line.sent(2)
    assert _texts(private) == ["⏰ стирка (late) — was due Mon 2026-11-30 08:00 (UTC)"]
    assert group["messages"][0]["type"] == "text"  # John never spoke there: no id to mention
    assert _texts(group) == ["⏰ Reminder for @John: стирка"]


async def test_a_failed_turn_gets_one_apology_and_the_chat_goes_on(
    line: Line, model: ScriptedProvider
) -> None:
    from lore.errors import ProviderServerError

    model.fail(ProviderServerError("the model is down", status=503))
    model.reply("Back again.")
    await line.say("Lore, are you there?", user=MOM, group=FAMILY)
    await line.say("Lore, now?", user=MOM, group=FAMILY)
    apology, answer = await line.sent(2)
    assert _texts(apology) == [SORRY] and _texts(answer) == ["Back again."]


async def test_the_recorded_payloads_are_taken_as_line_sends_them(
    line: Line, model: ScriptedProvider
) -> None:
    from tests.line_server import FIXTURES

    model.default = _echo
    for name in ("message_user", "message_group", "message_room", "message_group_quote",
                 "message_group_mention", "join", "follow", "leave"):  # fmt: skip
        body = (FIXTURES / f"{name}.json").read_bytes()  # byte for byte, signed as LINE does
        async with httpx.AsyncClient(base_url=line.url) as client:
            answer = await client.post(
                "/line/webhook", content=body, headers={"X-Line-Signature": sign(body)}
            )
        assert answer.status_code == 200, name
    await line.channel.drain()
    # Only the mention asked Lore anything (the others were a stranger, a quote of
    # someone else, plain talk); its text reached the model without the @mention.
    asked = [r.messages[-1]["content"] for r in model.requests]
    assert asked == ["when does grandma land?"]
    group = line.lore.session("line:group:Ca56f94637cc4347f90a25382909b24b9").messages
    assert [m.get("author") for m in group if m["role"] == "user"] == ["LINE user …d9e0"] * 3
