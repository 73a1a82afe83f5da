"""The reranking seam: a last look at a few dozen fused candidates before the final cut.

A reranker gets the query and the candidates with their fused scores and returns new
scores; it never adds or drops a candidate. Two ship: `NoReranker` (scores unchanged)
and `FeatureReranker`, which uses features that cost microseconds: who spoke (a
question that names a person favours what that person said), how many of the
question's content words a turn holds (term coverage), and when (a question that names
a time favours what was said, or is about, near it). No cross-encoder is used: none
that ships its weights inside an installable package was found for this machine, and a
model call per candidate would not fit the 30 ms budget of a search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from lore.ports.search import Stored
from lore.text import normalise

__all__ = ["Candidate", "FeatureReranker", "NoReranker", "Reranker", "TimeSpan"]


@dataclass(frozen=True)
class TimeSpan:
    """A half-open range of Unix seconds a query is about: [start, end)."""

    start: float
    end: float

    def distance(self, at: float) -> float:
        """Seconds from `at` to the span (0 inside it)."""
        if at < self.start:
            return self.start - at
        return max(0.0, at - self.end)


@dataclass(frozen=True)
class Candidate:
    entry: Stored
    score: float


class Reranker(Protocol):
    name: str

    def rerank(
        self, query: str, candidates: Sequence[Candidate], *, about: TimeSpan | None = None
    ) -> list[float]:
        """One new score per candidate, in the order given."""
        ...


class NoReranker:
    """Keeps the fused order: the seam with nothing behind it."""

    name = "none"

    def rerank(
        self, query: str, candidates: Sequence[Candidate], *, about: TimeSpan | None = None
    ) -> list[float]:
        return [c.score for c in candidates]


def _gap(a: TimeSpan, b: TimeSpan) -> float:
    """Seconds between two spans (0 when they overlap)."""
    return max(0.0, b.start - a.end, a.start - b.end)


_WORD = re.compile(r"[^\W\d_]+")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
# Words that carry a question's shape, not its content: a turn need not hold them.
_STOP = frozenset(
    "the and are was were what which who whom when where why how did does has have had "
    "for with about from that this these those her his their its she he they them you "
    "would could should will can been being any some into like "
    "что какие какой какая какое где когда как кто чем это был была были".split()
)


def _content_stems(words: set[str]) -> set[str]:
    """The query's content words, cut to a stem that finds their other forms ("painted",
    "paintings"; "книги", "книгу"); a CJK run by its first two characters (a word)."""
    stems = set()
    for word in words - _STOP:
        if _CJK.match(word):
            stems.add(word[:2])
        elif len(word) > 2:
            stems.add(word[:5])
    return stems


@dataclass(frozen=True)
class FeatureReranker:
    """Scores times (1 + bonuses): the speaker the query names; the share of its content
    words the entry holds; nearness to its time."""

    name = "features"
    speaker_bonus: float = 1.0  # a named person's own turns count double
    time_bonus: float = 0.3
    time_scale_days: float = 30.0
    coverage_bonus: float = 0.0  # × the share of the query's content words a turn holds

    def rerank(
        self, query: str, candidates: Sequence[Candidate], *, about: TimeSpan | None = None
    ) -> list[float]:
        words = set(_WORD.findall(normalise(query)))
        speakers = {w for c in candidates for w in _WORD.findall(normalise(c.entry.speaker))}
        content = _content_stems(words - speakers)
        scores = []
        for candidate in candidates:
            entry = candidate.entry
            factor = 1.0
            speaker = normalise(entry.speaker) if entry.kind == "message" else ""
            if speaker and set(_WORD.findall(speaker)) & words:
                factor += self.speaker_bonus
            if content and self.coverage_bonus:
                text = normalise(entry.text)
                held = sum(1 for stem in content if stem in text)
                factor += self.coverage_bonus * held / len(content)
            if about is not None:
                seconds = about.distance(entry.at)
                if entry.about_start is not None and entry.about_end is not None:
                    named = TimeSpan(entry.about_start, entry.about_end)
                    seconds = min(seconds, _gap(about, named))
                days = seconds / 86400.0
                factor += self.time_bonus / (1.0 + days / self.time_scale_days)
            scores.append(candidate.score * factor)
        return scores
