"""A scope is a conversation key in parts: parsed and written back to the very same key
for any key at all, its parts read by what the channel registered, a key of a channel
nobody registered kept whole as an opaque key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lore.errors import InvalidInputError
from lore.keys import MAX_KEY, conversation_key
from lore.scope import ChannelKeys, Scope, channel_keys, register
from lore.text import is_control

KEYS = [
    ("cli:default", Scope("cli", "", "default")),
    ("api:alice", Scope("api", "", "alice")),
    ("line:group:C123", Scope("line", "group", "C123")),
    ("line:user:U42", Scope("line", "user", "U42")),
    ("line:room:R7", Scope("line", "room", "R7")),
    ("telegram:42", Scope("telegram", "", "42")),
    ("telegram:-1001234", Scope("telegram", "", "-1001234")),
    ("owner", Scope("", "", "owner")),
    ("api:家庭群", Scope("api", "", "家庭群")),
    ("cli:работа", Scope("cli", "", "работа")),
    ("家庭:群组:小明", Scope("家庭", "", "群组:小明")),
    ("семья:чат:Маша", Scope("семья", "", "чат:Маша")),
    ("日本語", Scope("", "", "日本語")),
    ("line:group:C1:with:colons", Scope("line", "group", "C1:with:colons")),
    ("api:a:b:c", Scope("api", "", "a:b:c")),
    ("line:bogus:x", Scope("line", "", "bogus:x")),  # no LINE kind: part of the id
    ("line:group", Scope("line", "", "group")),
    ("line:group:", Scope("line", "group", "")),
    ("cli:", Scope("cli", "", "")),
    (":leading", Scope("", "", ":leading")),
    ("a::b", Scope("a", "", ":b")),
]


@pytest.mark.parametrize(("key", "scope"), KEYS)
def test_a_key_parses_into_its_parts_and_formats_back_to_itself(key: str, scope: Scope) -> None:
    assert Scope.parse(key) == scope
    assert str(scope) == scope.format() == key


def _keys() -> st.SearchStrategy[str]:
    part = st.text(
        st.characters(exclude_categories=["Cs"]).filter(lambda c: not is_control(c)),
        max_size=12,
    )
    known = st.sampled_from(["cli", "api", "telegram", "line", "line:group", "line:user", ""])
    joined = st.builds(lambda a, b: f"{a}:{b}" if a else b, known, part)
    return (
        st.one_of(part, joined, st.lists(part, min_size=2, max_size=5).map(":".join))
        .map(lambda key: key.strip(" "))
        .filter(lambda key: 0 < len(key) <= MAX_KEY)
    )


@given(_keys())
def test_every_conversation_key_is_a_scope_that_formats_back_to_the_same_key(key: str) -> None:
    conversation_key(key)
    scope = Scope.parse(key)
    assert str(scope) == key
    assert Scope(scope.channel, scope.kind, scope.id) == scope


def test_parsing_checks_the_key_as_every_entry_does() -> None:
    assert Scope.parse("  api:alice ") == Scope("api", "", "alice")  # spaces around go
    for bad in ("", "   ", "api:a\nb", "line:group:\u202eC1", "api:" + "x" * MAX_KEY):
        with pytest.raises(InvalidInputError):
            Scope.parse(bad)


@pytest.mark.parametrize(
    ("channel", "kind", "chat_id"),
    [
        ("telegram", "group", "-100"),  # Telegram's keys name no kind
        ("line", "bogus", "C1"),  # not a LINE kind
        ("", "", "api:alice"),  # a key with a channel is not an opaque one
        ("li:ne", "", "x"),
        ("api", "", "a\nb"),
        ("api", "", "alice "),  # a key loses the spaces around it
        ("line", "", "group:C1"),  # LINE reads that as a group
    ],
)
def test_parts_that_no_key_spells_that_way_are_refused(
    channel: str, kind: str, chat_id: str
) -> None:
    with pytest.raises(InvalidInputError):
        Scope(channel, kind, chat_id)


def test_the_built_in_channels_say_which_chats_are_groups_and_which_one_to_one() -> None:
    def shape(key: str) -> tuple[bool, bool]:
        scope = Scope.parse(key)
        return scope.is_group, scope.is_direct

    assert shape("line:group:C1") == shape("line:room:R1") == (True, False)
    assert shape("line:user:U1") == (False, True)
    assert shape("telegram:-1001") == (True, False)
    assert shape("telegram:42") == (False, True)
    assert shape("cli:default") == shape("api:alice") == shape("owner") == (False, False)


def test_a_channel_nobody_registered_keeps_its_keys_whole_as_opaque_keys() -> None:
    assert channel_keys("matrix") is None
    scope = Scope.parse("matrix:room:!abc:example.org")
    assert scope == Scope("matrix", "", "room:!abc:example.org")
    assert str(scope) == "matrix:room:!abc:example.org"
    assert scope.keys is None and not scope.is_group and not scope.is_direct


def test_a_registered_channel_names_its_kinds_and_its_groups() -> None:
    def group(scope: Scope) -> bool:
        return scope.kind == "群"

    keys = ChannelKeys("scopetest", kinds=("群", "私"), group=group)
    assert Scope.parse("scopetest:群:家:人") == Scope("scopetest", "", "群:家:人")  # unknown yet
    register(keys)
    register(keys)  # again, the same way: nothing changes
    assert channel_keys("scopetest") is keys
    scope = Scope.parse("scopetest:群:家:人")
    assert (scope.kind, scope.id, scope.is_group, scope.is_direct) == ("群", "家:人", True, False)
    assert Scope.parse("scopetest:其他:x") == Scope("scopetest", "", "其他:x")
    with pytest.raises(ValueError):
        register(ChannelKeys("scopetest", kinds=("群",)))  # another reading of stored keys
    with pytest.raises(ValueError):
        ChannelKeys("bad:name")
    with pytest.raises(ValueError):
        ChannelKeys("fine", kinds=("a:b",))


def test_the_built_in_channels_keys_are_known_to_a_process_that_loads_no_channel() -> None:
    import subprocess
    import sys

    code = "from lore.scope import Scope; print(Scope.parse('line:group:C1:x').kind)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "group"


def test_line_and_telegram_read_their_chats_from_a_key_and_refuse_another_channels() -> None:
    from lore.channels.line import Chat
    from lore.channels.telegram import _chat_id

    assert Chat.of_scope("line:room:R1:x") == Chat("room", "R1:x")
    assert Chat("group", "C1").scope == "line:group:C1"
    assert _chat_id("telegram:-1001234") == -1001234
    for key in ("telegram:42", "line:U1", "line:bogus:U1", "owner"):
        with pytest.raises(InvalidInputError, match="not a LINE chat"):
            Chat.of_scope(key)
    for key in ("line:user:42", "telegram:42x", "telegram:", "telegram:+42", "telegram:٤٢"):
        with pytest.raises(InvalidInputError, match="not a Telegram chat"):
            _chat_id(key)
    with pytest.raises(InvalidInputError):
        Chat("user", "U1\n")  # no key: LINE's ids are letters and digits
