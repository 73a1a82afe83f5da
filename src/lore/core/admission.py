"""What a turn takes in: a message no longer than `max_message_chars`, on every channel.

A longer message is refused before anything of it is stored or sent to the model; the
refusal says how long it was and which setting allows more.
"""

from __future__ import annotations

from lore.errors import InvalidInputError

__all__ = ["check_message", "refusal"]


def refusal(text: str, limit: int) -> str | None:
    """Why `text` is too long to take, or None when it is not."""
    if len(text) <= limit:
        return None
    return (
        f"that message is {len(text):,} characters; Lore takes at most {limit:,} "
        "(setting max_message_chars); nothing of it was kept"
    )


def check_message(text: str, limit: int) -> str:
    """`text`, or InvalidInputError when it is longer than `limit` characters."""
    problem = refusal(text, limit)
    if problem is not None:
        raise InvalidInputError(problem)
    return text
