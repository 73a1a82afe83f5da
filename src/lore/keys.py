"""Session keys ("cli:default", "line:group:C123") as safe, collision-free file names."""

from __future__ import annotations

import hashlib

__all__ = ["key_to_filename"]

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
