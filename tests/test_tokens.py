"""Token counting: exact for OpenAI models (offline tiktoken), estimated elsewhere, calibrated."""

from __future__ import annotations

import pytest

from lore.llm.tokens import TokenCounter, estimate_tokens
from lore.messages import Message, ToolCallRecord


def test_cjk_characters_count_about_one_token_each() -> None:
    assert estimate_tokens("我住在花蓮") == 5
    assert estimate_tokens("こんにちは") == 5
    assert estimate_tokens("안녕하세요") == 5


def test_other_text_counts_about_four_characters_per_token() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("I live in 花蓮") == 2 + 3  # two CJK, then ten characters rounded up


def test_openai_models_use_the_offline_tiktoken_encoding() -> None:
    counter = TokenCounter("openai/gpt-4o-mini")
    assert counter.exact
    assert counter.count("hello world") == 2
    assert counter.count("<|endoftext|>") > 1  # user text is never read as a special token


def test_other_models_are_estimated() -> None:
    counter = TokenCounter("anthropic/claude-sonnet-4-5")
    assert not counter.exact
    assert counter.count("hello world!") == 3
    assert TokenCounter("local").count("花蓮") == 2


def test_messages_include_per_message_overhead_and_tool_calls() -> None:
    counter = TokenCounter("ollama/qwen2.5")
    plain = counter.count_messages([{"role": "user", "content": "abcdefgh"}])
    assert plain == 2 + 4 + 3
    with_system = counter.count_messages([{"role": "user", "content": "abcdefgh"}], system="abcd")
    assert with_system == plain + 4 + 1
    call: ToolCallRecord = {
        "id": "c1",
        "name": "remember",
        "arguments": '{"content": "I live in Hualien"}',
    }
    with_call = counter.count_messages([{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert with_call > counter.count_messages([{"role": "assistant", "content": ""}]) + 8


def test_calibration_moves_later_counts_toward_reported_usage() -> None:
    counter = TokenCounter("anthropic/claude-x")
    text = "x" * 400
    assert counter.count(text) == 100
    for _ in range(20):
        counter.calibrate(counter.count(text), 150)
    assert counter.ratio == pytest.approx(1.5, abs=0.01)
    assert counter.count(text) == 150


def test_calibration_is_clamped_and_ignores_empty_figures() -> None:
    counter = TokenCounter("anthropic/claude-x")
    counter.calibrate(0, 500)
    counter.calibrate(500, 0)
    assert counter.ratio == 1.0
    for _ in range(50):
        counter.calibrate(10, 10_000)
    assert counter.ratio == 2.0
    for _ in range(50):
        counter.calibrate(10_000, 1)
    assert counter.ratio == 0.5


def test_one_odd_reply_does_not_swing_the_ratio() -> None:
    counter = TokenCounter("anthropic/claude-x")
    counter.calibrate(100, 200)
    assert 1.0 < counter.ratio < 1.5


def test_estimate_counts_russian_about_two_characters_a_token() -> None:
    from lore.llm.tokens import estimate_tokens

    russian = "Пользователь пьёт чай без сахара, а не кофе. Напомни мне через 10 минут."
    # cl100k gives about one token per two characters of Russian; never estimate far below.
    assert estimate_tokens(russian) >= len(russian) // 2 - 5
    assert estimate_tokens("The user drinks tea without sugar.") <= 10


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
def test_the_upper_bound_is_never_below_the_count(model: str) -> None:
    """What lets a turn skip loading the tokenizer while everything fits by the bound."""
    counter = TokenCounter(model)
    counter.calibrate(100, 170)  # a scaled counter too
    texts = [
        "hello world",
        "我住在花蓮，每天早上喝咖啡。",
        "Мама любит кофе по утрам",
        "🌷🌷 tulips ١٢٣ <|endoftext|>",
        "x" * 5000,
    ]
    for text in texts:
        assert counter.most(text) >= counter.count(text)
    messages: list[Message] = [{"role": "user", "content": text} for text in texts]
    assert counter.most_messages(messages, "You are Lore.") >= counter.count_messages(
        messages, "You are Lore."
    )


def test_an_estimating_counter_counts_the_same_by_its_bound_and_loads_nothing() -> None:
    counter = TokenCounter("anthropic/claude-sonnet-4-5")
    assert counter.loaded
    assert counter.most("我住在花蓮 and more") == counter.count("我住在花蓮 and more")
    exact = TokenCounter("openai/gpt-4o-mini")
    exact.count("hello")
    assert exact.loaded  # in memory from now on: counting is exact at no cost
