"""A conversation scope as a value: the channel, kind and id a key ("line:group:C123")
names, for code that needs the parts. The key string stays the stored form (databases,
transcripts, config files); `Scope.parse` and `str(scope)` go between the two, losslessly.

What a channel's keys look like is the channel's to say: it registers a `ChannelKeys`
(`lore.channels.scopes` registers the built-in ones when the package loads), and this
module reads any key by that registry alone. A key is `channel:id`, or `channel:kind:id`
where the channel names kinds; the id may hold colons. A key of a channel nobody
registered is still a key: `channel:id` with the rest as its id, and one with no channel
(`owner`, `日本語`, `:x`) is all id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from lore.errors import InvalidInputError, quoted
from lore.keys import conversation_key

__all__ = ["ChannelKeys", "Scope", "channel_keys", "register"]


def _never(scope: Scope) -> bool:
    return False


@dataclass(frozen=True)
class ChannelKeys:
    """What one channel's conversation keys look like."""

    channel: str
    kinds: tuple[str, ...] = ()  # the kinds a key names between channel and id; () none
    # A chat of several people (a memory there is a bulletin board).
    group: Callable[[Scope], bool] = _never
    # A chat with one person alone: the owner's own 1:1 chat joins their one conversation.
    direct: Callable[[Scope], bool] = _never

    def __post_init__(self) -> None:
        if not self.channel or ":" in self.channel:
            raise ValueError(f"a channel's name is a word without ':', not {self.channel!r}")
        if any(not kind or ":" in kind for kind in self.kinds):
            raise ValueError(f"the kinds of {self.channel} are words without ':': {self.kinds}")


_REGISTRY: dict[str, ChannelKeys] = {}


def register(keys: ChannelKeys) -> None:
    """Say what a channel's keys look like; registering it again the same way is a no-op,
    another way an error (two readings of one stored key cannot both be right)."""
    known = _REGISTRY.get(keys.channel)
    if known is not None and known != keys:
        raise ValueError(f"the keys of channel {keys.channel!r} are registered already")
    _REGISTRY[keys.channel] = keys
    _parsed.cache_clear()  # a key read before may read otherwise now


def channel_keys(channel: str) -> ChannelKeys | None:
    """How the channel's keys look, None for a channel nobody registered."""
    return _REGISTRY.get(channel)


def _split(key: str) -> tuple[str, str, str]:
    channel, colon, rest = key.partition(":")
    if not colon or not channel:
        return "", "", key
    keys = _REGISTRY.get(channel)
    if keys is not None and keys.kinds:
        kind, colon, chat_id = rest.partition(":")
        if colon and kind in keys.kinds:
            return channel, kind, chat_id
    return channel, "", rest


@dataclass(frozen=True)
class Scope:
    """A conversation's key, in parts. Only a valid conversation key (`lore.keys`) in its
    one spelling is a Scope: `Scope("line", "group", "C1")` is `line:group:C1`, while
    `Scope("telegram", "group", "-1")` is refused, as Telegram's keys have no kinds."""

    channel: str  # '' for a key that names none
    kind: str  # '' where the channel's keys name no kind
    id: str

    def __post_init__(self) -> None:
        text = self.format()
        if conversation_key(text) != text or _split(text) != (self.channel, self.kind, self.id):
            raise InvalidInputError(
                f"{quoted(text)} is not how a key names channel {self.channel!r}, "
                f"kind {self.kind!r}, id {self.id!r}"
            )

    @classmethod
    def parse(cls, text: str) -> Scope:
        """The parts of a conversation key; InvalidInputError for what is none
        (`lore.keys.conversation_key`: empty, too long, a control character)."""
        return _parsed(text)

    def format(self) -> str:
        """The key as it is stored."""
        if not self.channel:
            return self.id
        if self.kind:
            return f"{self.channel}:{self.kind}:{self.id}"
        return f"{self.channel}:{self.id}"

    def __str__(self) -> str:
        return self.format()

    @property
    def keys(self) -> ChannelKeys | None:
        """How its channel's keys look; None when nobody registered the channel."""
        return _REGISTRY.get(self.channel) if self.channel else None

    @property
    def is_group(self) -> bool:
        """A chat of several people, as its channel tells them apart."""
        keys = self.keys
        return keys is not None and keys.group(self)

    @property
    def is_direct(self) -> bool:
        """A chat with one person alone, as its channel tells them apart."""
        keys = self.keys
        return keys is not None and keys.direct(self)


@lru_cache(maxsize=4096)
def _parsed(text: str) -> Scope:
    # A turn asks about its scope several times; checking a key costs about 25 µs.
    return Scope(*_split(conversation_key(text)))
