"""One turn end to end with the scripted provider."""

from __future__ import annotations

import asyncio
import json

import pytest

from lore.bus import Conversation
from lore.core.context import IDENTITY
from lore.core.feature import CompletedTurn, Feature
from lore.core.loop import TurnResult
from lore.core.tools import ToolContext
from lore.errors import AuthenticationError, ProviderServerError
from lore.events import Emit, Event, Notice, ReplyFailed, ReplyFinished, TextDelta, ToolCallEvent
from lore.llm.scripted import ScriptedProvider, Step
from lore.messages import content_text
from lore.runtime import Runtime, build
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)


def _conversation(lore: Runtime, events: list[Event], key: str = "cli:default") -> Conversation:
    return lore.conversation(key, emit=events.append)


async def test_reply_streams_and_is_persisted(lore: Runtime, model: ScriptedProvider) -> None:
    events: list[Event] = []
    model.reply("Hello John, nice to meet you.")
    result = (await _conversation(lore, events).send("hi, I'm John")).result
    assert result is not None and result.text == "Hello John, nice to meet you."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == result.text
    assert isinstance(events[-1], ReplyFinished)
    stored = lore.session("cli:default").messages
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "hi, I'm John"),
        ("assistant", "Hello John, nice to meet you."),
    ]
    assert stored[0]["author"] == "john"


async def test_second_turn_sends_the_first_as_history(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("first answer").reply("second answer")
    conversation = _conversation(lore, [])
    await conversation.send("first question")
    await conversation.send("second question")
    sent = model.requests[1].messages
    assert [m["content"] for m in sent] == ["first question", "first answer", "second question"]


async def test_history_survives_a_new_runtime(lore: Runtime, model: ScriptedProvider) -> None:
    model.reply("noted")
    await _conversation(lore, []).send("我住在花莲")
    fresh_model = ScriptedProvider()
    fresh_model.reply("你住在花莲")
    again = build(lore.config, provider=fresh_model, clock=lore.clock)
    await again.conversation("cli:default", emit=lambda e: None).send("我住在哪里？")
    assert fresh_model.requests[0].messages[0]["content"] == "我住在花莲"
    await again.aclose()


async def test_system_prompt_carries_date_time_zone_and_speaker(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("ok")
    await _conversation(lore, []).send("hi")
    system = model.requests[0].system
    assert "2026-11-30 17:00 (Monday), timezone Asia/Taipei (UTC+0800)" in system
    assert "Speaking: john" in system
    assert "Conversation: cli:default" in system


async def test_editing_soul_changes_the_very_next_request(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("a").reply("b")
    conversation = _conversation(lore, [])
    await conversation.send("one")
    assert "## SOUL.md" not in model.requests[0].system  # still the template
    (lore.config.workspace / "SOUL.md").write_text("# Soul\n\nSpeak like a pirate.\n")
    await conversation.send("two")
    assert "Speak like a pirate." in model.requests[1].system


async def test_memory_md_is_injected_only_when_edited(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("a").reply("b")
    conversation = _conversation(lore, [])
    await conversation.send("one")
    assert "MEMORY.md" not in model.requests[0].system
    (lore.config.workspace / "MEMORY.md").write_text("# Memory\n\n- Project Lore uses SQLite.\n")
    await conversation.send("two")
    assert "Project Lore uses SQLite." in model.requests[1].system


async def test_the_owners_user_md_and_memory_md_never_reach_another_conversation(
    lore: Runtime, model: ScriptedProvider
) -> None:
    workspace = lore.workspace.root
    (workspace / "USER.md").write_text("# User\n\nJohn, lives at 12 Zhongshan Rd.\n")
    (workspace / "MEMORY.md").write_text("# Memory\n\n- John is job hunting in secret.\n")
    (workspace / "SOUL.md").write_text("# Soul\n\nSpeak like a pirate.\n")
    model.reply("a").reply("b")
    await _conversation(lore, [], key="line:group:family").send("大家好")
    await _conversation(lore, []).send("hi")
    group, owner = model.requests[0].system, model.requests[1].system
    assert "Zhongshan" not in group and "job hunting" not in group
    assert "Speak like a pirate." in group  # how Lore behaves is not about the owner
    assert "Zhongshan" in owner and "job hunting" in owner


async def test_unknown_tool_gets_an_error_result_and_the_turn_finishes(
    lore: Runtime, model: ScriptedProvider
) -> None:
    events: list[Event] = []
    model.tool_call("launch_rockets", {"count": 3}).reply("Sorry, I can't do that.")
    result = (await _conversation(lore, events).send("launch")).result
    assert result is not None and result.text == "Sorry, I can't do that."
    tool_events = [e for e in events if isinstance(e, ToolCallEvent)]
    assert tool_events[0].is_error and "unknown tool 'launch_rockets'" in tool_events[0].result
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and content_text(tool_message["content"]).startswith(
        "Error:"
    )
    roles = [m["role"] for m in lore.session("cli:default").messages]
    assert roles == ["user", "assistant", "tool", "assistant"]


class EchoTool:
    name = "echo"
    description = "Echo the text back."
    parameters = {"type": "object", "properties": {"text": {"type": "string"}}}

    async def run(self, args: dict[str, object], ctx: ToolContext) -> str:
        return f"echo: {args['text']}"


async def test_tool_results_go_back_to_the_model(lore: Runtime, model: ScriptedProvider) -> None:
    lore.tools.add(EchoTool())
    model.tool_call("echo", {"text": "ping"}).reply("pong")
    await _conversation(lore, []).send("x")
    assert model.requests[1].messages[-1]["content"] == "echo: ping"
    assert any(spec.name == "echo" for spec in model.requests[0].tools)


async def test_malformed_tool_arguments_go_back_to_the_model(
    lore: Runtime, model: ScriptedProvider
) -> None:
    lore.tools.add(EchoTool())
    model.tool_call("echo", "{not json").reply("fixed")
    await _conversation(lore, []).send("x")
    assert "not valid JSON" in model.requests[1].messages[-1]["content"]


async def test_tool_rounds_are_capped_then_the_model_must_answer(
    lore: Runtime, model: ScriptedProvider
) -> None:
    limit = lore.config.max_tool_rounds
    for _ in range(limit):
        model.tool_call("nothing", {})
    model.reply("I stopped.")
    result = (await _conversation(lore, []).send("loop forever")).result
    assert result is not None and result.text == "I stopped." and result.rounds == limit
    assert model.requests[-1].tools == []
    assert "used all tool rounds" in model.requests[-1].system


async def test_cancelled_turn_persists_nothing_and_runs_no_background_work(
    lore: Runtime, model: ScriptedProvider
) -> None:
    ran: list[str] = []

    async def hook(turn: CompletedTurn, emit: Emit) -> None:
        ran.append(turn.user_text)

    lore.features.append(Feature("test", after_turn=[hook]))
    events: list[Event] = []
    model.reply("too slow", delay=30)
    conversation = _conversation(lore, events)
    task = asyncio.create_task(conversation.send("hello?"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await lore.background.drain()
    # What the user said is kept, marked cancelled: no later window ever carries it.
    (said,) = lore.session("cli:default").messages
    assert said["content"] == "hello?" and said["cancelled"] is True
    assert ran == []
    assert any(isinstance(e, ReplyFailed) and e.cancelled for e in events)
    model.reply("hi")
    await conversation.send("hello again")
    assert [m["content"] for m in model.requests[-1].messages] == ["hello again"]


async def test_provider_failure_keeps_the_user_message_and_reports_one_line(
    lore: Runtime, model: ScriptedProvider
) -> None:
    events: list[Event] = []
    model.fail(AuthenticationError("openai rejected the API key (HTTP 401)", status=401))
    result = (await _conversation(lore, events).send("are you there?")).result
    assert result is None
    failures = [e for e in events if isinstance(e, ReplyFailed)]
    assert failures and "401" in failures[0].message and "\n" not in failures[0].message
    stored = lore.session("cli:default").messages
    assert stored == [
        {**stored[0], "role": "user", "content": "are you there?", "unanswered": True}
    ]


async def test_a_turn_failing_after_a_tool_round_keeps_what_the_tools_did(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.tool_call("set_reminder", {"text": "call mom", "when": "2026-12-01T09:00:00+08:00"})
    model.fail(ProviderServerError("openai is unavailable (HTTP 503)", status=503))
    events: list[Event] = []
    outcome = await _conversation(lore, events).send("remind me to call mom tomorrow 9am")
    assert outcome.result is None
    assert any(isinstance(e, ReplyFailed) for e in events)
    assert any(isinstance(e, Notice) and "reminder #1 set" in e.text for e in events)
    stored = lore.session("cli:default").messages
    assert [m["role"] for m in stored] == ["user", "assistant", "tool"]
    assert stored[0]["unanswered"] is True
    assert stored[2]["tool_call_id"] == stored[1]["tool_calls"][0]["id"]
    assert "Reminder #1 set" in stored[2]["content"]
    # The retry sees the reminder is already set, as a legal tool exchange.
    model.reply("It is already set.")
    await _conversation(lore, []).send("did it work?")
    sent = model.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]


async def test_background_work_does_not_delay_the_reply(
    lore: Runtime, model: ScriptedProvider
) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_hook(turn: CompletedTurn, emit: Emit) -> None:
        started.set()
        await release.wait()

    lore.features.append(Feature("test", after_turn=[slow_hook]))
    model.reply("one").reply("two")
    conversation = _conversation(lore, [])
    assert await conversation.send("a") is not None
    assert await conversation.send("b") is not None  # did not wait for the first hook
    await started.wait()
    assert lore.background.pending >= 1
    release.set()
    await lore.background.drain()
    assert lore.background.pending == 0


async def test_background_failure_becomes_a_notice_not_a_crash(
    lore: Runtime, model: ScriptedProvider
) -> None:
    async def broken(turn: CompletedTurn, emit: Emit) -> None:
        raise RuntimeError("boom")

    lore.features.append(Feature("test", after_turn=[broken]))
    events: list[Event] = []
    model.reply("fine")
    await _conversation(lore, events).send("x")
    await lore.background.drain()
    assert any(isinstance(e, Notice) and "boom" in e.text for e in events)


async def test_unknown_slash_command_is_never_sent_to_the_model(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = _conversation(lore, [])
    outcome = await conversation.send("/hepl")
    assert outcome.command is not None and not outcome.ok
    assert outcome.text == "Unknown command /hepl — did you mean /help?"
    assert model.requests == []
    assert "/status" in (await conversation.send("/help")).text


async def test_history_window_stays_within_the_context_budget(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.context_window = 6000
    model.default = Step(text="ok " * 200)
    conversation = _conversation(lore, [])
    for i in range(30):
        await conversation.send(f"message {i} " + "word " * 300)
    last = [r for r in model.requests if r.system.startswith(IDENTITY)][-1]
    total = lore.tokens.count_messages(last.messages, last.system)
    assert total <= 6000 - min(lore.config.max_output_tokens, 6000 // 4)
    assert last.messages[0]["role"] == "user"
    assert content_text(last.messages[-1]["content"]).startswith("message 29")


async def test_prompt_and_reply_together_fit_the_context_window(
    lore: Runtime, model: ScriptedProvider
) -> None:
    # OpenAI (gpt-4: 8,192) and vLLM refuse a request whose prompt and max_tokens together
    # pass the window, so the reply may use only the room the budget kept for it.
    model.context_window = 8192
    model.default = Step(text="好 " * 200)
    conversation = _conversation(lore, [])
    for i in range(30):
        await conversation.send(f"第{i}条消息 " + "字" * 600)
    specs = json.dumps([vars(spec) for spec in lore.tools.specs()], ensure_ascii=False)
    for request in model.requests:
        if request.system.startswith(IDENTITY):
            prompt = lore.tokens.count_messages(request.messages, request.system)
            assert prompt + lore.tokens.count(specs) + request.max_tokens <= 8192


async def test_a_message_starting_with_a_path_goes_to_the_model_not_the_command_table(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conversation = _conversation(lore, [])
    model.reply("It maps host names to addresses.")
    result = (await conversation.send("/etc/hosts 是干什么的？")).result
    assert isinstance(result, TurnResult) and result.text.startswith("It maps")
    assert model.requests[0].messages[-1]["content"] == "/etc/hosts 是干什么的？"
    assert "Commands:" in (await conversation.send("/help")).text
    assert "session" in (await conversation.send("/status\tnow")).text


async def test_a_refused_oversized_request_shrinks_the_next_window(
    lore: Runtime, model: ScriptedProvider
) -> None:
    from lore.errors import BadRequestError

    model.context_window = 6000
    model.default = Step(text="ok")
    conversation = _conversation(lore, [])
    for i in range(12):
        await conversation.send(f"message {i} " + "слово " * 150)
    await lore.background.drain()
    ratio = lore.tokens.ratio
    # The provider counts more than our estimate: it refuses the request outright.
    model.fail(BadRequestError("context length exceeded (HTTP 400)", status=400))
    assert (await conversation.send("one more " + "слово " * 150)).result is None
    sent_before = len([r for r in model.requests if r.system.startswith(IDENTITY)][-1].messages)
    assert lore.tokens.ratio > ratio
    await conversation.send("and again")
    sent_after = len([r for r in model.requests if r.system.startswith(IDENTITY)][-1].messages)
    assert sent_after < sent_before


def test_the_templates_note_to_the_user_is_not_sent_once_the_file_has_content(
    lore: Runtime,
) -> None:
    from lore.ports.notes import template

    path = lore.workspace.root / "USER.md"
    path.write_text(template("USER.md") + "\n- John lives in Hualien.\n", encoding="utf-8")
    (user,) = [f for f in lore.workspace.bootstrap() if f.name == "USER.md"]
    assert user.content == "# User\n\n- John lives in Hualien."
