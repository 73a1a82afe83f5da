"""Long replies cut into pieces a chat service accepts: Telegram takes 4,096 UTF-16 units in
one message, LINE 5,000 characters. Cuts fall at a paragraph, a line or a space if any."""

from __future__ import annotations

__all__ = ["split_message", "utf16_len"]


def split_message(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` UTF-16 units, cut at a paragraph, line or space if any."""
    pieces: list[str] = []
    rest = text.strip()
    while rest:
        if utf16_len(rest) <= limit:
            pieces.append(rest)
            break
        cut = _fit(rest, limit)
        for sep in ("\n\n", "\n", " "):
            at = rest.rfind(sep, 0, cut)
            if at > cut // 2:
                cut = at
                break
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return pieces or [""]


def utf16_len(text: str) -> int:
    """The length in UTF-16 code units, as Telegram and LINE count offsets and limits."""
    return len(text.encode("utf-16-le")) // 2


def _fit(text: str, limit: int) -> int:
    """The longest prefix (in characters) within `limit` UTF-16 units."""
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > limit:
            return index
    return len(text)
