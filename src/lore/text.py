"""Text for the memory index: one tokenisation for writing and querying, in any script.

SQLite's unicode61 sees a Chinese phrase as one token, and trigram cannot match the
two-character words Chinese is full of (咖啡, 开会). So text is tokenised here, before
FTS5 sees it (it then only splits on the spaces we put in):

- Han, Kana and Hangul runs become character unigrams and bigrams (the `grams` column),
  so any one- or two-character query matches, and a longer one matches as all its
  bigrams; Han runs are also segmented by jieba into words (the `words` column), which
  ranks whole-word matches above accidental ones (上海 in 早上海边).
- Latin words go in as they are; FTS5's porter tokenizer stems them (English only).
- Cyrillic words are stemmed here with the Snowball Russian rules, porter being blind
  to them.

Queries use bigrams, never jieba, so searching never pays jieba's ~0.4 s dictionary load.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "Terms",
    "counted",
    "display_width",
    "index_terms",
    "is_control",
    "match_expression",
    "normalise",
    "one_line",
    "slugify",
    "warm_up",
]

_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0002fa1f"
)
_HAN_CHARS = "\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_HAN = re.compile(f"[{_HAN_CHARS}]")
_HAN_SPLIT = re.compile(f"([{_HAN_CHARS}]+)")
_CYRILLIC = re.compile("[\u0400-\u04ff]")
# A CJK run, or a run of other letters and digits.
_RUN = re.compile(f"(?P<cjk>[{_CJK}]+)|(?P<word>(?:(?![{_CJK}])[^\\W_])+)")

# A long CJK query run is a sentence, not a word: its bigrams are matched one by one.
_WORD_RUN = 4
_MAX_UNITS = 32
_STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from has have how i in is it its me my "
    "of on or our so that the their them they this to was we were what when where which "
    "who why will with you your".split()
)


@dataclass(frozen=True)
class Terms:
    """Space-joined index terms for the `words` and `grams` columns."""

    words: str
    grams: str


def normalise(text: str) -> str:
    """NFKC (full-width Latin, half-width Kana) and case folding, as index and query share."""
    return unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")


def counted(count: int, noun: str, plural: str = "") -> str:
    """ "1 message", "3 messages": a count with its English noun ("1 memory", "2
    memories" when `plural` says so)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural or noun + 's'}"


def display_width(text: str) -> int:
    """Characters as a prompt budget sees them: wide (CJK) characters count as two."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if unicodedata.east_asian_width(c) in "WF")


# Explicit embeddings, overrides and isolates reorder what follows them; the LRM and RLM
# marks (U+200E, U+200F) and the joiners only shape text and are kept.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_control(char: str) -> bool:
    """A character that is no part of a name: C0/C1 controls (line breaks, tab, NUL),
    lone surrogates, the line and paragraph separators, and the bidi controls that
    reorder the text after them."""
    return (
        unicodedata.category(char) in ("Cc", "Cs")
        or char in "\u2028\u2029"
        or char in _BIDI_CONTROLS
    )


def one_line(text: str, limit: int = 200) -> str:
    """Caller-given text (a key, a channel, a name) for one line of a prompt: control
    characters become spaces, runs of spaces one, and it is cut at `limit` with "…"."""
    flat = " ".join("".join(" " if is_control(c) else c for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def index_terms(text: str) -> Terms:
    words: list[str] = []
    grams: list[str] = []
    for match in _RUN.finditer(normalise(text)):
        run = match.group("cjk")
        if run is None:
            words.append(_word_term(match.group("word")))
            continue
        grams.extend(run)
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
        for part in _HAN_SPLIT.split(run):
            if _HAN.match(part):
                words.extend(_segment(part))
            elif part:
                words.append(part)  # a Kana or Hangul word, as written
    return Terms(" ".join(words), " ".join(grams))


def match_expression(query: str) -> str | None:
    """An FTS5 MATCH expression for `query` (any-of its words, ranked), or None if empty."""
    units: list[str] = []
    latin: list[str] = []
    for match in _RUN.finditer(normalise(query)):
        run = match.group("cjk")
        if run is None:
            latin.append(_word_term(match.group("word")))
        elif len(run) == 1:
            units.append(f"{{grams keywords}}: {_quote(run)}")
        elif len(run) <= _WORD_RUN:
            bigrams = " AND ".join(_quote(run[i : i + 2]) for i in range(len(run) - 1))
            units.append(f"({{grams keywords}}: ({bigrams}) OR words: {_quote(run)})")
        else:
            units.extend(
                f"{{grams keywords}}: {_quote(run[i : i + 2])}" for i in range(len(run) - 1)
            )
    content = [w for w in latin if w not in _STOPWORDS] or latin
    units.extend(f"{{words keywords}}: {_quote(w)}" for w in content)
    units = list(dict.fromkeys(units))[:_MAX_UNITS]
    return " OR ".join(units) if units else None


def warm_up() -> None:
    """Load jieba's dictionary now (about 0.4 s) rather than on the first remember."""
    _segmenter()


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _word_term(word: str) -> str:
    return stem_russian(word) if _CYRILLIC.search(word) else word


# -- jieba, loaded on first use ------------------------------------------------------

_jieba_lock = threading.Lock()
_jieba_cut: Callable[[str], list[str]] | None = None


def _segmenter() -> Callable[[str], list[str]]:
    global _jieba_cut
    with _jieba_lock:
        if _jieba_cut is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)  # it announces its dictionary load at DEBUG
            jieba.initialize()
            _jieba_cut = jieba.lcut_for_search
        return _jieba_cut


def _segment(run: str) -> list[str]:
    if len(run) == 1:  # jieba's answer for one character; a date's 年, 月, 日 never load it
        return [run]
    return _segmenter()(run)


# -- Snowball Russian stemmer (snowballstem.org/algorithms/russian/stemmer.html) -------

_VOWELS = "аеиоуыэюя"
_PERFECTIVE = re.compile(r"(?:(?<=[ая])(?:в|вши|вшись)|ив|ивши|ившись|ыв|ывши|ывшись)$")
_REFLEXIVE = re.compile(r"(?:ся|сь)$")
_ADJECTIVE = re.compile(
    r"(?:ее|ие|ые|ое|ими|ыми|ей|ий|ый|ой|ем|им|ым|ом|его|ого|ему|ому|их|ых|ую|юю|ая|яя|ою|ею)$"
)
_PARTICIPLE = re.compile(r"(?:(?<=[ая])(?:ем|нн|вш|ющ|щ)|ивш|ывш|ующ)$")
_VERB = re.compile(
    r"(?:(?<=[ая])(?:ла|на|ете|йте|ли|й|л|ем|н|ло|но|ет|ют|ны|ть|ешь|нно)"
    r"|ила|ыла|ена|ейте|уйте|ите|или|ыли|ей|уй|ил|ыл|им|ым|ен|ило|ыло|ено|ят|ует|уют"
    r"|ит|ыт|ены|ить|ыть|ишь|ую|ю)$"
)
_NOUN = re.compile(
    r"(?:а|ев|ов|ие|ье|е|иями|ями|ами|еи|ии|и|ией|ей|ой|ий|й|иям|ям|ием|ем|ам|ом|о|у|ах"
    r"|иях|ях|ы|ь|ию|ью|ю|ия|ья|я)$"
)
_SUPERLATIVE = re.compile(r"(?:ейше|ейш)$")


def stem_russian(word: str) -> str:
    """The Snowball Russian stem of a lower-case word: Москве and Москва give москв."""
    rv_start = _region(word, 0)
    if rv_start >= len(word):
        return word
    r2_start = _region(word, _region(word, 0, after_consonant=True), after_consonant=True)
    prefix, rv = word[:rv_start], word[rv_start:]

    rv = _cut(_PERFECTIVE, rv) if _PERFECTIVE.search(rv) else _step1_rest(rv)
    if rv.endswith("и"):
        rv = rv[:-1]
    for ending in ("ость", "ост"):
        if rv.endswith(ending) and len(prefix) + len(rv) - len(ending) >= r2_start:
            rv = rv[: -len(ending)]
            break
    if rv.endswith("нн"):
        rv = rv[:-1]
    elif _SUPERLATIVE.search(rv):
        rv = _cut(_SUPERLATIVE, rv)
        if rv.endswith("нн"):
            rv = rv[:-1]
    elif rv.endswith("ь"):
        rv = rv[:-1]
    return prefix + rv


def _step1_rest(rv: str) -> str:
    rv = _cut(_REFLEXIVE, rv)
    if _ADJECTIVE.search(rv):
        return _cut(_PARTICIPLE, _cut(_ADJECTIVE, rv))
    if _VERB.search(rv):
        return _cut(_VERB, rv)
    return _cut(_NOUN, rv)


def _cut(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    return text[: match.start()] if match else text


def _region(word: str, start: int, *, after_consonant: bool = False) -> int:
    """Index after the first vowel (RV), or after the first vowel-consonant pair (R1/R2)."""
    for i in range(start, len(word)):
        if word[i] in _VOWELS:
            if not after_consonant:
                return i + 1
            for j in range(i + 1, len(word)):
                if word[j] not in _VOWELS:
                    return j + 1
            return len(word)
    return len(word)


_SLUG_WORDS = 6
_SLUG_CHARS = 48


def slugify(text: str, *, fallback: str = "session") -> str:
    """A safe ASCII kebab-case file-name part ("Trip to Hualien!" -> "trip-to-hualien")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())[:_SLUG_WORDS]
    slug = "-".join(words)[:_SLUG_CHARS].strip("-")
    return slug or fallback
