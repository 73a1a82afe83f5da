"""File tools: read_file, write_file, edit_file and list_dir, confined to the project.

Reads are text only (a NUL byte or invalid UTF-8 means binary, refused) and cut to the
output cap with a hint where to read on. A write or an edit is shown to the trust policy
as a unified diff; when the owner is asked, the file is read again after the answer, and
a file that changed meanwhile is left alone, so what was approved is what gets written.
"""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import PurePosixPath
from typing import Any

from lore.core.approval import Action
from lore.core.tools import ToolContext, optional_int, required_str
from lore.errors import ToolError
from lore.tools.confine import Confinement, Located
from lore.tools.workbench import Workbench, os_errors_as_tool_errors

__all__ = ["EditFileTool", "ListDirTool", "ReadFileTool", "WriteFileTool", "unified_diff"]

MAX_FILE_BYTES = 8 * 1024 * 1024  # the most read_file looks at, and write_file accepts
_BINARY_PROBE = 8192
_MAX_ENTRIES = 500


class ReadFileTool:
    name = "read_file"
    description = (
        "Read a text file in the project folder (or the workspace when no project is "
        "chosen). Paths are relative to that folder. Optional start_line and end_line "
        "(1-based, inclusive) read part of a long file; long output is cut, with a hint "
        "where to go on. Binary files are refused."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the project"},
            "start_line": {"type": "integer", "description": "First line to read (1-based)"},
            "end_line": {"type": "integer", "description": "Last line to read (inclusive)"},
        },
        "required": ["path"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        place = self.bench.confinement(ctx)
        located = place.locate(required_str(args, "path"))
        start = optional_int(args, "start_line", 1)
        end = optional_int(args, "end_line", 0)
        if start < 1 or (end and end < start):
            raise ToolError("start_line must be 1 or more, and end_line not before it")
        verdict = self.bench.policy.for_tool(self.name)
        await self.bench.authorize(ctx, Action(self.name, f"read {located.shown}"), verdict)
        text, complete = read_text(place, located)
        lines = text.splitlines()
        total = len(lines)
        if total == 0:
            return f"{located.shown} is empty."
        last = min(end or total, total)
        if start > max(total, 1):
            raise ToolError(
                f"{located.shown} has {total} lines; start_line {start} is past the end"
            )
        body, shown_last = _fit(lines[start - 1 : last], start, self.bench.settings.output_cap)
        of = f"of {total}" if complete else f"of the first {total} (file longer than 8 MB)"
        header = f"{located.shown} · lines {start}-{shown_last} {of}"
        if shown_last < last:
            header += f" · cut; read on with start_line={shown_last + 1}"
        return f"{header}\n{body}" if body else f"{header}\n(empty)"


class WriteFileTool:
    name = "write_file"
    description = (
        "Create a file or replace its whole content, in the project folder. Prefer "
        "edit_file to change part of an existing file. The owner may be asked first; "
        "an error result means nothing was written."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the project"},
            "content": {"type": "string", "description": "The complete new content"},
        },
        "required": ["path", "content"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        place = self.bench.confinement(ctx)
        located = place.locate(required_str(args, "path"))
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("'content' is required and must be a string")
        if len(content.encode("utf-8")) > MAX_FILE_BYTES:
            raise ToolError("content is larger than 8 MB")
        before = read_text(place, located)[0] if place.exists(located) else None
        verdict = self.bench.write_verdict(self.name, place, located)
        verb = "create" if before is None else "overwrite"
        action = Action(
            self.name,
            f"{verb} {located.shown}",
            unified_diff(located.rel, before, content),
        )
        await self.bench.authorize(ctx, action, verdict)
        _unchanged_since(place, located, before)
        place.write_bytes(located, content.encode("utf-8"))
        lines = len(content.splitlines())
        return f"{'Created' if before is None else 'Wrote'} {located.shown} ({lines} lines)."


class EditFileTool:
    name = "edit_file"
    description = (
        "Change part of a text file in the project folder: old_text must occur exactly "
        "once (copy it from read_file, whitespace included) and becomes new_text. The "
        "owner may be asked first; an error result means nothing changed."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the project"},
            "old_text": {"type": "string", "description": "Exact text to replace, once"},
            "new_text": {"type": "string", "description": "The replacement ('' deletes)"},
        },
        "required": ["path", "old_text", "new_text"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        place = self.bench.confinement(ctx)
        located = place.locate(required_str(args, "path"))
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not old:
            raise ToolError("'old_text' is required: the exact text to replace")
        if not isinstance(new, str):
            raise ToolError("'new_text' is required (an empty string deletes old_text)")
        if old == new:
            raise ToolError("old_text and new_text are the same; nothing to change")
        before = read_text(place, located)[0]
        count = before.count(old)
        if count == 0:
            raise ToolError(
                f"old_text was not found in {located.shown}; nothing changed. Read the file "
                "again and copy the text exactly, whitespace and line breaks included."
            )
        if count > 1:
            lines = _match_lines(before, old)
            raise ToolError(
                f"old_text occurs {count} times in {located.shown} (lines {lines}); nothing "
                "changed. Include more of the surrounding text so it matches once."
            )
        after = before.replace(old, new, 1)
        verdict = self.bench.write_verdict(self.name, place, located)
        action = Action(
            self.name, f"edit {located.shown}", unified_diff(located.rel, before, after)
        )
        await self.bench.authorize(ctx, action, verdict)
        _unchanged_since(place, located, before)
        place.write_bytes(located, after.encode("utf-8"))
        return f"Edited {located.shown}: replaced 1 passage."


class ListDirTool:
    name = "list_dir"
    description = (
        "List a folder of the project (default: its top). Folders end with '/', links "
        "with '@'; sizes in bytes."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Folder, relative to the project"},
        },
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        place = self.bench.confinement(ctx)
        path = args.get("path")
        located = place.locate(path if isinstance(path, str) and path.strip() else ".")
        await self.bench.authorize(
            ctx, Action(self.name, f"list {located.shown}"), self.bench.policy.for_tool(self.name)
        )
        entries = _entries(place, located)
        if not entries:
            return f"{located.shown}/ is empty."
        shown = entries[:_MAX_ENTRIES]
        more = f"\n… and {len(entries) - len(shown)} more" if len(entries) > len(shown) else ""
        return self.bench.cap(f"{located.shown}/\n" + "\n".join(shown) + more)


def read_text(place: Confinement, located: Located) -> tuple[str, bool]:
    """The file's text and whether it was read whole; binary files are refused."""
    data, size = place.read_bytes(located, MAX_FILE_BYTES)
    if b"\x00" in data[:_BINARY_PROBE]:
        raise ToolError(f"{located.shown} is a binary file ({size} bytes); only text is read")
    complete = len(data) >= size
    if not complete:
        data = data[: data.rfind(b"\n") + 1]
    try:
        return data.decode("utf-8"), complete
    except UnicodeDecodeError:
        raise ToolError(
            f"{located.shown} is not UTF-8 text ({size} bytes); only text is read"
        ) from None


def unified_diff(rel: PurePosixPath, before: str | None, after: str) -> str:
    diff = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else f"a/{rel}",
        tofile=f"b/{rel}",
    )
    lines = [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff
    ]
    return "".join(lines) or "(no change)\n"


def _unchanged_since(place: Confinement, located: Located, before: str | None) -> None:
    now = read_text(place, located)[0] if place.exists(located) else None
    if now != before:
        raise ToolError(
            f"{located.shown} changed while waiting for approval; nothing was written. "
            "Read it again."
        )


def _fit(lines: list[str], start: int, cap: int) -> tuple[str, int]:
    """As many whole lines as fit in `cap` characters, and the number of the last one."""
    used = 0
    kept: list[str] = []
    for line in lines:
        if kept and used + len(line) + 1 > cap:
            break
        kept.append(line[:cap])
        used += len(line) + 1
    return "\n".join(kept), start + len(kept) - 1


def _match_lines(text: str, needle: str) -> str:
    found: list[str] = []
    position = text.find(needle)
    while position != -1 and len(found) < 10:
        found.append(str(text.count("\n", 0, position) + 1))
        position = text.find(needle, position + 1)
    return ", ".join(found)


def _entries(place: Confinement, located: Located) -> list[str]:
    folders, files = [], []
    with place.directory(located.rel) as fd, os.scandir(fd) as listing:
        for entry in listing:
            if place.is_state(located.path / entry.name):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed since the folder was read
            if stat.S_ISLNK(info.st_mode):
                files.append(f"{entry.name}@")
            elif stat.S_ISDIR(info.st_mode):
                folders.append(f"{entry.name}/")
            else:
                files.append(f"{entry.name}  {info.st_size}")
    return sorted(folders) + sorted(files)
