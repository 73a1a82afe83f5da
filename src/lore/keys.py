"""Conversation keys ("cli:default", "api:alice", "line:group:C123", "telegram:42"): the
one check every entry makes before a turn runs, and the key as a safe, collision-free
file name."""

from __future__ import annotations

import hashlib

from lore.errors import InvalidInputError, quoted
from lore.text import is_control

__all__ = ["MAX_KEY", "conversation_key", "key_to_filename"]

MAX_KEY = 200  # characters


def conversation_key(raw: str) -> str:
    """`raw` (spaces around it dropped) if it can name a conversation, else InvalidInputError.

    Any script a person types is a key (日本語, Привет, עברית, emoji with their joiners,
    LRM/RLM marks); refused are an empty key, one over MAX_KEY characters, and any control
    character (see `lore.text.is_control`): a key goes into file names, log lines, the
    system prompt and the `X-Lore-Session` header, where a line break or a reversed
    reading order would forge or hide something.
    """
    key = raw.strip(" ")
    if not key:
        raise InvalidInputError("a conversation key cannot be empty")
    if len(key) > MAX_KEY:
        raise InvalidInputError(
            f"a conversation key is at most {MAX_KEY} characters, not {quoted(key)}"
        )
    bad = next((char for char in key if is_control(char)), None)
    if bad is not None:
        raise InvalidInputError(
            f"a conversation key cannot hold a control character (U+{ord(bad):04X}): {quoted(key)}"
        )
    return key


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_MAX_STEM = 180


def key_to_filename(key: str, suffix: str = ".jsonl") -> str:
    """Percent-encode everything but [A-Za-z0-9_-], so the mapping is injective.

    `a:b` -> `a%3Ab`, `a_b` -> `a_b`, `../x` -> `%2E%2E%2Fx`: never a path separator,
    never a leading dot, never two keys on one file. Very long keys keep a readable
    prefix and a hash of the whole key.
    """
    if not key:
        raise ValueError("a session key cannot be empty")
    stem = "".join(c if c in _SAFE else _escape(c) for c in key)
    if len(stem) > _MAX_STEM:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        stem = f"{stem[: _MAX_STEM - 18]}~{digest}"
    return stem + suffix


def _escape(char: str) -> str:
    return "".join(f"%{b:02X}" for b in char.encode("utf-8"))
