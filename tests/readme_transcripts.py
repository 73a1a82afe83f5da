"""The transcripts of the README and the documentation's pages (`docs/`, in the site's
order), read: every fenced block with a `$ ` command line.

A block may be preceded by a marker that the replay reads:

    <!-- transcript: NAME -->                 names the block (its home is its own)
    <!-- transcript: NAME, home=OTHER -->     replays in the home block OTHER left behind
    <!-- transcript: NAME, setup=SETUP -->    a named setup prepares the home first
    <!-- transcript: skip (REASON) -->        not replayed; the replay counts and names it

A block without a marker is replayed in a fresh home of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DOCS", "README", "Step", "Transcript", "docs_text", "read_transcripts"]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _pages() -> list[Path]:
    """The README, then each page of the site in its navigation's order (`nav:` in
    mkdocs.yml, one `- Title: page.md` a line)."""
    site = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = site.split("\nnav:\n", 1)[1]
    pages = re.findall(r"^\s+- [^:]+: (\S+\.md)$", nav, re.M)
    return [README, *(ROOT / "docs" / page for page in pages)]


DOCS = _pages()


def docs_text() -> str:
    """The README and every page, as one text (for what must be said somewhere)."""
    return "\n\n".join(page.read_text(encoding="utf-8") for page in DOCS)


_MARKER = re.compile(r"<!--\s*transcript:\s*(.*?)\s*-->")
_FENCE = re.compile(r"^\s*```")


@dataclass
class Step:
    """One command and what the README shows it printing (stdout and stderr, in order)."""

    command: str
    expected: str


@dataclass
class Transcript:
    name: str
    line: int  # where the block starts in its file
    home: str
    setup: str = ""
    skip: str = ""
    steps: list[Step] = field(default_factory=list)
    file: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def read_transcripts(text: str | None = None) -> list[Transcript]:
    """Every transcript block of the README and the pages, in order (of `text` alone,
    when given)."""
    if text is not None:
        return _read(text, "README.md")
    found: list[Transcript] = []
    for page in DOCS:
        found += _read(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
    return found


def _read(text: str, file: str) -> list[Transcript]:
    lines = text.splitlines()
    found: list[Transcript] = []
    marker = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _MARKER.search(line)
        if match:
            marker = match.group(1)
        elif _FENCE.match(line):
            end = index + 1
            while end < len(lines) and not _FENCE.match(lines[end]):
                end += 1
            body = lines[index + 1 : end]
            if any(row.startswith("$ ") for row in body):
                found.append(_transcript(marker, index + 1, body, file))
            marker = ""
            index = end
        elif line.strip():
            marker = ""  # a marker belongs to the block right after it
        index += 1
    return found


def _transcript(marker: str, line: int, body: list[str], file: str) -> Transcript:
    unnamed = f"line-{line}" if file == "README.md" else f"{Path(file).stem}-line-{line}"
    transcript = Transcript(name=unnamed, line=line, home=unnamed, file=file)
    if marker.startswith("skip"):
        transcript.skip = marker.removeprefix("skip").strip(" ()—-:") or "no reason given"
    elif marker:
        name, *options = (part.strip() for part in marker.split(","))
        transcript.name = transcript.home = name
        for option in options:
            key, _, value = option.partition("=")
            if key == "home":
                transcript.home = value
            elif key == "setup":
                transcript.setup = value
            else:
                raise ValueError(f"{file}:{line}: unknown transcript option {option!r}")
    transcript.steps = _steps(body)
    return transcript


def _steps(body: list[str]) -> list[Step]:
    steps: list[Step] = []
    rows = iter(body)
    for row in rows:
        if row.startswith("$ "):
            command = row[2:]
            while command.endswith("\\"):
                command = command[:-1].rstrip() + " " + next(rows).strip()
            steps.append(Step(command, ""))
        elif steps:
            steps[-1].expected += row + "\n"
    return steps
