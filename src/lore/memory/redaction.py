"""Redacting a text wherever it was copied: strings, JSON Lines, Markdown, file names.

A `Redactor` replaces every occurrence of its texts (case-insensitively) by
"[forgotten]", and the file-name form of each text (the slug a transcript or summary was
named after) by "forgotten". The same rule runs over file contents and file names, so a
path stored inside one file still names the renamed file. JSON Lines keep their
structure: each line is parsed, its strings redacted, and written back; lines without a
match stay byte for byte as they were (a padded metadata line keeps its width).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lore.text import slugify

__all__ = ["REPLACEMENT", "Redactor", "redact_fast_export"]

REPLACEMENT = "[forgotten]"
_SLUG_REPLACEMENT = "forgotten"
_MIN_SLUG = 8  # shorter slugs ("a-b") would match ordinary words in names


@dataclass(frozen=True)
class Redactor:
    texts: tuple[str, ...]
    _texts: re.Pattern[str] = field(init=False, repr=False)
    _slugs: re.Pattern[str] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        texts = sorted({t for t in self.texts if t.strip()}, key=len, reverse=True)
        if not texts:
            raise ValueError("nothing to redact")
        object.__setattr__(
            self, "_texts", re.compile("|".join(re.escape(t) for t in texts), re.IGNORECASE)
        )
        slugs = sorted(
            {s for s in (slugify(t, fallback="") for t in texts) if len(s) >= _MIN_SLUG},
            key=len,
            reverse=True,
        )
        pattern = "|".join(re.escape(s) for s in slugs)
        object.__setattr__(self, "_slugs", re.compile(pattern) if slugs else None)

    # -- strings ---------------------------------------------------------------------

    def count(self, text: str) -> int:
        found = len(self._texts.findall(text))
        if self._slugs is not None:
            found += len(self._slugs.findall(text))
        return found

    def text(self, text: str) -> str:
        # Slugs first: a shorter text (a keyword) inside a slug would break it, and the
        # path that names a renamed file would no longer match its new name.
        if self._slugs is not None:
            text = self._slugs.sub(_SLUG_REPLACEMENT, text)
        return self._texts.sub(REPLACEMENT, text)

    def name(self, name: str) -> str:
        """A file name with any slug of the texts taken out."""
        if self._slugs is None:
            return name
        return self._slugs.sub(_SLUG_REPLACEMENT, name)

    def raw(self, data: bytes) -> bytes:
        return self.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def raw_count(self, data: bytes) -> int:
        return self.count(data.decode("utf-8", "surrogateescape"))

    # -- JSON ------------------------------------------------------------------------

    def value(self, value: Any) -> Any:
        """A JSON value with every string redacted (tool arguments: JSON in a string)."""
        if isinstance(value, str):
            if self.count(value) == 0:
                return value
            nested = _json_object(value)
            if nested is not None:
                return json.dumps(self.value(nested), ensure_ascii=False)
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        return value

    def jsonl(self, data: bytes) -> tuple[bytes, int]:
        """JSON Lines content redacted line by line; the number of lines changed."""
        out: list[bytes] = []
        changed = 0
        for line in data.splitlines(keepends=True):
            body = line.rstrip(b"\r\n")
            ending = line[len(body) :]
            if self.raw_count(body) == 0:
                out.append(line)
                continue
            changed += 1
            try:
                parsed = json.loads(body)
            except ValueError:
                out.append(self.raw(body) + ending)  # not JSON: redact it as text
                continue
            new = json.dumps(self.value(parsed), ensure_ascii=False, separators=(",", ":"))
            encoded = new.encode("utf-8")
            if body.endswith(b" ") and len(encoded) < len(body):
                encoded += b" " * (len(body) - len(encoded))  # a padded line keeps its width
            out.append(encoded + ending)
        return b"".join(out), changed


def redact_fast_export(stream: bytes, redact: Callable[[bytes], bytes]) -> tuple[bytes, int]:
    """A `git fast-export` stream with every `data` block passed through `redact`, and
    the number of blocks that changed. Everything else is copied as it is."""
    out: list[bytes] = []
    changed = 0
    position = 0
    size = len(stream)
    while position < size:
        end = stream.find(b"\n", position)
        end = size if end < 0 else end + 1
        line = stream[position:end]
        position = end
        if not line.startswith(b"data "):
            out.append(line)
            continue
        spec = line[5:].strip()
        if spec.startswith(b"<<"):  # a delimited block (fast-export does not write these)
            delimiter = b"\n" + spec[2:] + b"\n"
            stop = stream.find(delimiter, position)
            block = stream[position:stop]
            position = stop + len(delimiter)
        else:
            length = int(spec)
            block = stream[position : position + length]
            position += length
        new = redact(block)
        if new != block:
            changed += 1
        out.append(b"data %d\n" % len(new))
        out.append(new)
    return b"".join(out), changed


def _json_object(text: str) -> Any:
    stripped = text.strip()
    if not (stripped.startswith("{") or stripped.startswith("[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None
