"""The history window is legal and budgeted."""

from __future__ import annotations

from lore.core.window import history_window
from lore.messages import Message


def _count(message: Message) -> int:
    return len(str(message.get("content") or "")) + 1


def _turn(i: int) -> list[Message]:
    return [
        {"role": "user", "content": f"question {i}"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": f"c{i}", "name": "t", "arguments": "{}"}],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": "result"},
        {"role": "assistant", "content": f"answer {i}"},
    ]


def test_window_starts_at_a_user_message_never_an_orphan_tool_result() -> None:
    messages = [m for i in range(10) for m in _turn(i)]
    for budget in range(0, 400, 7):
        window = history_window(messages, start=0, budget=budget, count=_count)
        if window.messages:
            assert window.messages[0]["role"] == "user"
        assert window.tokens <= budget


def test_window_keeps_newest_turns_that_fit() -> None:
    messages = [m for i in range(10) for m in _turn(i)]
    per_turn = sum(_count(m) for m in _turn(0))
    window = history_window(messages, start=0, budget=per_turn * 3, count=_count)
    assert window.messages[0]["content"] == "question 7"
    assert window.start == 28


def test_window_skips_consolidated_messages() -> None:
    messages = [m for i in range(4) for m in _turn(i)]
    window = history_window(messages, start=8, budget=10_000, count=_count)
    assert window.messages[0]["content"] == "question 2"


def test_window_of_only_assistant_messages_is_empty() -> None:
    messages: list[Message] = [{"role": "assistant", "content": "reminder"}]
    assert history_window(messages, start=0, budget=100, count=_count).messages == []


def test_a_tool_call_without_all_its_results_never_reaches_the_model() -> None:
    # A crash tore the turn's last lines (or one was corrupt and skipped): the call to c1
    # lost one of its two results, and a result of c9 lost its call.
    messages: list[Message] = [
        {"role": "user", "content": "remind me and note it"},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {"id": "c1", "name": "set_reminder", "arguments": "{}"},
                {"id": "c2", "name": "remember", "arguments": "{}"},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Reminder #1 set"},
        {"role": "user", "content": "and?"},
        {"role": "tool", "tool_call_id": "c9", "content": "stray"},
        *_turn(5),
    ]
    window = history_window(messages, start=0, budget=10_000, count=_count)
    assert window.messages == [
        {"role": "user", "content": "remind me and note it"},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": "and?"},
        *_turn(5),
    ]
    assert window.tokens == sum(_count(m) for m in window.messages)


def test_an_assistant_message_without_text_or_results_is_left_out() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "note it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "t", "arguments": "{}"}],
        },
    ]
    window = history_window(messages, start=0, budget=10_000, count=_count)
    assert window.messages == [{"role": "user", "content": "note it"}]
