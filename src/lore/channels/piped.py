"""`lore chat` with its input piped in: each line is one message, each reply one output.

No line editor reads a pipe: prompt_toolkit would cut a line at a NUL byte and takes
minutes over a very long line. Lines are read as bytes; bytes that are not UTF-8 text
(and NUL) become U+FFFD with a warning naming the line, so nothing is dropped unseen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, TextIO

from lore.channels.terminal import EXIT, Renderer

if TYPE_CHECKING:
    from pathlib import Path

    from lore.runtime import Runtime

__all__ = ["decode_line", "run_piped"]


def decode_line(raw: bytes) -> tuple[str, bool]:
    """A line of input as text, and whether anything in it had to be replaced."""
    text = raw.decode("utf-8", "replace")
    cleaned = text.replace("\x00", "\ufffd")
    return cleaned, cleaned != raw.decode("utf-8", "surrogateescape")


async def run_piped(
    lore: Runtime,
    key: str,
    source: BinaryIO,
    *,
    out: TextIO,
    err: TextIO,
    project: Path | None = None,
) -> int:
    """Send every non-empty line of `source`; 1 if any of them failed. No one can answer
    a tool's "may I?" here: an `ask` is refused."""
    from lore.sessions.closing import close_if_idle

    renderer = Renderer(out, err, interactive=False)
    conversation = lore.conversation(key, emit=renderer.emit, project=project)
    await close_if_idle(lore, key, emit=renderer.emit)
    code = 0
    try:
        for number, raw in enumerate(source, start=1):
            text, replaced = decode_line(raw.rstrip(b"\r\n"))
            if not text.strip():
                continue
            if text.strip() == EXIT:
                break
            if replaced:
                err.write(
                    f"lore: line {number} had bytes that are not UTF-8 text (or NUL); "
                    "they were sent as \ufffd\n"
                )
            outcome = await conversation.send(text)
            if not outcome.ok:
                code = 1
            out.flush()
    finally:
        await lore.background.drain()
    return code
