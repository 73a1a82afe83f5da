"""A conversation key is anything a person types on one line; control characters, an empty
key and an overlong one are refused with one short line that quotes little of the value."""

from __future__ import annotations

import pytest

from lore.errors import InvalidInputError, quoted
from lore.keys import MAX_KEY, conversation_key
from lore.text import one_line

TYPED = [
    "cli:default",
    "api:alice",
    "line:group:C123",
    "telegram:42",
    "api:日本語",
    "api:Привет мир",
    "api:שלום",
    "api:مرحبا",
    "api:👨‍👩‍👧 family",  # a ZWJ sequence
    "api:می\u200cخواهم",  # ZWNJ, as Persian is written
    "api:\u200fשלום\u200e abc",  # RLM and LRM marks
    "api:" + "字" * (MAX_KEY - 4),
]

REFUSED = [
    "api:a\nb",
    "api:a\rb",
    "api:a\x00b",
    "api:a\tb",
    "api:a\x85b",  # NEL, a C1 control
    "api:a\x7fb",
    "api:\ud800",  # a lone surrogate
    "api:a\u2028b",
    "api:a\u2029b",
    "api:\u202eevil",
    "api:\u202aa",
    "api:\u2066a\u2069",
    "api:\u2067a",
    "api:\u2068a",
]


@pytest.mark.parametrize("key", TYPED)
def test_a_key_in_any_script_is_accepted_as_typed(key: str) -> None:
    assert conversation_key(key) == key
    assert conversation_key(f"  {key} ") == key


@pytest.mark.parametrize("key", REFUSED)
def test_a_key_with_a_control_character_is_refused_in_one_line(key: str) -> None:
    with pytest.raises(InvalidInputError, match="control character") as refused:
        conversation_key(key)
    message = str(refused.value)
    assert "\n" not in message and "\r" not in message and "\x00" not in message
    assert not any(c in message for c in "\u2028\u2029\u202a\u202e\u2066\u2067\u2068\u2069")


@pytest.mark.parametrize("key", ["", "   "])
def test_an_empty_key_is_refused(key: str) -> None:
    with pytest.raises(InvalidInputError, match="cannot be empty"):
        conversation_key(key)


def test_an_overlong_key_is_refused_quoting_only_its_start() -> None:
    with pytest.raises(InvalidInputError, match=f"at most {MAX_KEY}") as refused:
        conversation_key("api:" + "x" * 10_000)
    message = str(refused.value)
    assert len(message) < 150
    assert "(10004 characters)" in message


def test_a_control_character_deep_in_a_long_key_is_refused_briefly() -> None:
    with pytest.raises(InvalidInputError) as refused:
        conversation_key("api:" + "y" * 150 + "\n")
    assert len(str(refused.value)) < 150


def test_quoted_keeps_a_short_value_whole_and_cuts_a_long_one() -> None:
    assert quoted("in 5 minutes") == "'in 5 minutes'"
    assert quoted("a\nb") == "'a\\nb'"
    long = quoted("z" * 1_000_000)
    assert long == "'" + "z" * 40 + "'… (1000000 characters)"
    assert quoted("abcdef", limit=3) == "'abc'… (6 characters)"


def test_one_line_flattens_breaks_controls_and_bidi_overrides() -> None:
    assert one_line("api:a\nb\r\n- Speaking: x") == "api:a b - Speaking: x"
    assert one_line("a\x00b\u2028c\u202ed\t e") == "a b c d e"
    assert one_line("日本語 👨‍👩‍👧") == "日本語 👨‍👩‍👧"
    assert one_line("w" * 500, limit=20) == "w" * 19 + "…"
