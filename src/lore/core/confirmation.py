"""Asking the person who spoke to confirm, in the conversation itself: "forget everything
I told you" in a family group waits for a yes from that person, never from someone else.

A tool or a command asks (`Confirmations.ask`) and its turn ends; the bus gives the same
person's next message in that conversation to `answer` before anything else. A yes runs
the action; a no keeps everything; any other message drops the question and is handled as
usual (nothing said is lost). Messages of others in the group never answer. A question not
answered within the trust policy's approval timeout is forgotten.

Unlike `core.approval` (the owner allowing a tool's action while the tool waits), nothing
waits here: the answer comes as a message of its own, in the conversation's queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Confirmations", "is_no", "is_yes"]

# Answers in the languages Lore is used in; the first word decides ("yes please", "да, удали").
_YES = frozenset(
    "y yes yep yeah yup ok okay sure confirm confirmed "
    "是 是的 好 好的 对 對 确认 確認 确定 確定 可以 行 嗯 "
    "да ага угу конечно подтверждаю давай".split()
)
_NO = frozenset(
    "n no nope nah cancel stop "
    "不 不要 不用 不是 否 取消 算了 别 別 "
    "нет не отмена отменить стоп".split()
)
_WORDS = re.compile(r"[^\s,，.。!！?？;；:：、]+")
_MOST_WORDS = 4  # a longer message is something else, not an answer


def _first_word(text: str) -> str | None:
    words: list[str] = _WORDS.findall(text.casefold())
    if not words or len(words) > _MOST_WORDS:
        return None
    return words[0]


def is_yes(text: str) -> bool:
    return _first_word(text) in _YES


def is_no(text: str) -> bool:
    return _first_word(text) in _NO


@dataclass(frozen=True)
class _Question:
    asked_at: datetime
    act: Callable[[], str]  # what a yes does; returns what to tell the person
    declined: str  # what a no says


class Confirmations:
    """Open questions, at most one per person per conversation."""

    def __init__(self, timeout_seconds: float) -> None:
        self._timeout = timedelta(seconds=timeout_seconds)
        self._open: dict[tuple[str, str], _Question] = {}

    def ask(
        self,
        scope: str,
        person: str,
        *,
        act: Callable[[], str],
        declined: str,
        now: datetime,
    ) -> None:
        """Wait for `person`'s yes in `scope`; a question asked again replaces the last."""
        self._open[_key(scope, person)] = _Question(now, act, declined)

    def waiting(self, scope: str, person: str, now: datetime) -> bool:
        question = self._open.get(_key(scope, person))
        return question is not None and now - question.asked_at <= self._timeout

    def answer(self, scope: str, person: str, text: str, now: datetime) -> str | None:
        """What to tell `person` when `text` answered their question; None when it did not
        (no question, too late, or a message that is neither yes nor no)."""
        question = self._open.pop(_key(scope, person), None)
        if question is None or now - question.asked_at > self._timeout:
            return None
        if is_yes(text):
            return question.act()
        if is_no(text):
            return question.declined
        return None


def _key(scope: str, person: str) -> tuple[str, str]:
    return scope, " ".join(person.split()).casefold()
