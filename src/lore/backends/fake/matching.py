"""The fakes' search: a plain word and character match, no index, no ranking model."""

from __future__ import annotations

import re

from lore.text import normalise

__all__ = ["matches"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+")


def matches(query: str, text: str) -> int:
    """How many of the query's words (a Latin or Cyrillic word, or a CJK run as all its
    bigrams) occur in `text`; a word matches any word it begins (tea → teas)."""
    haystack = normalise(text)
    words = _WORD.findall(_CJK.sub(" ", haystack))
    score = 0
    for run in _CJK.findall(normalise(query)):
        grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        score += all(gram in haystack for gram in grams)
    for word in _WORD.findall(_CJK.sub(" ", normalise(query))):
        score += any(candidate.startswith(word) for candidate in words)
    return score
