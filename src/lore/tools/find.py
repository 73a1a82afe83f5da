"""Finding things in the project: glob (paths by pattern) and grep (lines by regex).

Both walk the tree with open folder descriptors and never follow a link, skip Lore's
state and the usual bulky folders (.git, node_modules, virtual environments, caches),
and read files the way read_file does, so a link pointing out of the project is never
read. The walk runs in a thread: a big tree does not stall the event loop.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from lore.core.approval import Action
from lore.core.tools import ToolContext, optional_str, required_str
from lore.errors import ToolError
from lore.tools.confine import Confinement, Located
from lore.tools.workbench import Workbench, os_errors_as_tool_errors

__all__ = ["GlobTool", "GrepTool", "glob_regex"]

SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
    }
)
_MAX_PATHS = 300
_MAX_MATCHES = 200
_MAX_FILES = 20_000
_MAX_GREP_BYTES = 2 * 1024 * 1024
_NOFOLLOW_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def relative_pattern(pattern: str) -> str:
    """A glob relative to the project: a leading './' dropped; absolute or '..' refused."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(f"{pattern!r}: a glob is relative to the project folder, without '..'")
    return pattern or "*"


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over relative paths: `*` and `?` stay within a folder, `**/` spans any."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class GlobTool:
    name = "glob"
    description = (
        "Find files in the project by path pattern, e.g. '**/*.py' or 'docs/*.md' "
        "(`*` stays within a folder, `**/` spans folders). Returns matching paths."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "description": "Glob over paths"}},
        "required": ["pattern"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        pattern = relative_pattern(required_str(args, "pattern"))
        place = self.bench.confinement(ctx)
        verdict = self.bench.policy.for_tool(self.name)
        await self.bench.authorize(ctx, Action(self.name, f"glob {pattern}"), verdict)
        regex = glob_regex(pattern)
        start = place.locate(".")
        found = await asyncio.to_thread(
            lambda: [str(path) for path, _ in _walk(place, start) if regex.match(str(path))][
                : _MAX_PATHS + 1
            ]
        )
        if not found:
            return f"No file matches {pattern!r}."
        more = "\n… more not shown; narrow the pattern" if len(found) > _MAX_PATHS else ""
        return self.bench.cap("\n".join(sorted(found[:_MAX_PATHS])) + more)


class GrepTool:
    name = "grep"
    description = (
        "Search the text files of the project for a regular expression (Python syntax). "
        "Optional path (a folder or file to search in) and glob (only files whose path "
        "matches, e.g. '**/*.md'). Returns path:line: text for each match."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression"},
            "path": {"type": "string", "description": "Folder or file to search (default: all)"},
            "glob": {"type": "string", "description": "Only paths matching this glob"},
            "ignore_case": {"type": "boolean", "description": "Case-insensitive search"},
        },
        "required": ["pattern"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        text = required_str(args, "pattern")
        flags = re.IGNORECASE if args.get("ignore_case") is True else 0
        try:
            regex = re.compile(text, flags)
        except re.error as exc:
            raise ToolError(f"{text!r} is not a valid regular expression: {exc}") from None
        only = optional_str(args, "glob")
        path_filter = glob_regex(relative_pattern(only)) if only else None
        place = self.bench.confinement(ctx)
        start = place.locate(optional_str(args, "path") or ".")
        verdict = self.bench.policy.for_tool(self.name)
        await self.bench.authorize(ctx, Action(self.name, f"grep {text!r}"), verdict)
        matches = await asyncio.to_thread(_grep, place, start, regex, path_filter)
        if not matches:
            return f"No match for {text!r}."
        for path, _ in matches[:_MAX_MATCHES]:
            ctx.provenance.read(path)  # the reply may rest on a line shown from it
        more = (
            "\n… more matches not shown; narrow the search" if len(matches) > _MAX_MATCHES else ""
        )
        return self.bench.cap("\n".join(line for _, line in matches[:_MAX_MATCHES]) + more)


def _grep(
    place: Confinement,
    start: Located,
    regex: re.Pattern[str],
    path_filter: re.Pattern[str] | None,
) -> list[tuple[str, str]]:
    """(path, "path:line: text") of each matching line, one past the most shown."""
    matches: list[tuple[str, str]] = []
    for path, read in _walk(place, start):
        if path_filter is not None and not path_filter.match(str(path)):
            continue
        text = read()
        if text is None or not regex.search(text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                matches.append((str(path), f"{path}:{number}: {line.strip()[:300]}"))
                if len(matches) > _MAX_MATCHES:
                    return matches
    return matches


def _walk(place: Confinement, start: Located) -> Iterator[tuple[PurePosixPath, Any]]:
    """(path relative to the root, a function reading its text or None) for each file."""
    if start.path.is_file():
        yield start.rel, lambda: _read_located(place, start)
        return
    seen = 0
    guarded = place.near_state(start.path)  # else no path below can be Lore's state
    with place.directory(start.rel) as top:
        for folder, dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            base = start.rel / folder if folder != "." else start.rel
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in SKIPPED and not (guarded and place.is_state(place.root / base / d))
            )
            for name in sorted(files):
                rel = PurePosixPath(os.path.normpath(base / name))
                if guarded and place.is_state(place.root / rel):
                    continue
                seen += 1
                if seen > _MAX_FILES:
                    return
                yield rel, (lambda fd=fd, name=name: _read_at(place, fd, name))


def _read_located(place: Confinement, located: Located) -> str | None:
    try:
        data, size = place.read_bytes(located, _MAX_GREP_BYTES + 1)
    except ToolError:
        return None
    return _text(data)


def _read_at(place: Confinement, folder: int, name: str) -> str | None:
    try:
        fd = os.open(name, _NOFOLLOW_READ, dir_fd=folder)
    except OSError:
        return None  # a link, gone, or unreadable: skipped
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_GREP_BYTES:
            return None
        if place.links_to_home(info):
            return None  # a hard link to a file in Lore's home
        chunks, left = [], info.st_size + 1
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return _text(b"".join(chunks))
    finally:
        os.close(fd)


def _text(data: bytes) -> str | None:
    if len(data) > _MAX_GREP_BYTES or b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
