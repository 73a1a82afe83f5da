"""The model's tools: a small protocol, a registry, and the context each call runs in.

A tool raises `ToolError` for anything the model should hear about (bad id, refused
content); the registry turns that, an unknown tool name, or malformed arguments into an
error result, so a tool round never ends the turn. Tools known only at run time (an MCP
server's) come from a `ToolSource`, which `prepare` lets look them up before a turn.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lore.core.provenance import Provenance
from lore.errors import DiskFullError, LoreError, ToolError
from lore.llm.base import ToolCall, ToolSpec
from lore.messages import Decision
from lore.metrics import METRICS

if TYPE_CHECKING:
    from lore.core.approval import Approver

__all__ = ["Tool", "ToolContext", "ToolRegistry", "ToolResult", "ToolSource"]

log = logging.getLogger(__name__)


@dataclass
class ToolContext:
    """Who is asking, where, and when: everything a tool may rely on."""

    scope: str  # conversation key, e.g. "cli:default"
    author: str  # who is speaking
    session_id: str
    message_index: int  # index of the user message that started this turn
    now: datetime
    timezone: str
    channel: str = "cli"
    trust: str = "owner"  # of the speaker: owner | member | guest
    owner: bool = True  # the owner speaking in one of the owner's conversations
    tools_enabled: bool = True  # the model can call tools this turn
    project: Path | None = None  # the chosen project folder; None: the agent workspace
    approver: Approver | None = None  # who answers a tool's "may I?"; None: no one can
    # What the trust policy decided for the call being run, recorded with its result.
    decision: Decision | None = None
    # Memory ids shown to the model this turn (the `#id` lines of the block).
    shown_memory_ids: set[int] = field(default_factory=set)
    # Reminder ids shown to the model: by set_reminder or list_reminders, this turn or in
    # the history it was sent; only those may be cancelled.
    shown_reminder_ids: set[int] = field(default_factory=set)
    # And scheduled task ids, by schedule_task or list_tasks.
    shown_task_ids: set[int] = field(default_factory=set)
    # What this turn showed the model, kept with its reply (`why`).
    provenance: Provenance = field(default_factory=Provenance)
    # Notices for the user ("noted #12 …"), rendered by the channel after the reply.
    notices: list[str] = field(default_factory=list)


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str: ...


class ToolSource(Protocol):
    """Tools that are only known once something was asked (an MCP server's list)."""

    async def prepare(self, ctx: ToolContext) -> None:
        """Look the tools up for the turn in `ctx`; never raises."""
        ...

    def tools(self) -> Sequence[Tool]:
        """The tools known now."""
        ...


@dataclass(frozen=True)
class ToolResult:
    call: ToolCall
    content: str
    is_error: bool
    decision: Decision | None = None  # allowed / approved by whom / refused


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._owner_only: set[str] = set()
        self._sources: list[ToolSource] = []  # owner-only, their names after the others
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool, *, owner_only: bool = False) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool
        if owner_only:
            self._owner_only.add(tool.name)

    def add_source(self, source: ToolSource) -> None:
        """Tools found at run time, offered only to the owner; a name taken by a tool
        added with `add` stays that tool's."""
        self._sources.append(source)

    async def prepare(self, ctx: ToolContext) -> None:
        """Let each source look its tools up, when this turn may see them."""
        if ctx.owner and ctx.tools_enabled:
            for source in self._sources:
                await source.prepare(ctx)

    def names(self, ctx: ToolContext | None = None) -> list[str]:
        return [name for name in self._all() if self._visible(name, ctx)]

    def specs(self, ctx: ToolContext | None = None) -> list[ToolSpec]:
        """The tools offered to the model; owner-only ones only to the owner."""
        return [
            ToolSpec(t.name, t.description, t.parameters)
            for t in self._all().values()
            if self._visible(t.name, ctx)
        ]

    def _all(self) -> dict[str, Tool]:
        if not self._sources:
            return self._tools
        found = dict(self._tools)
        for source in self._sources:
            for tool in source.tools():
                found.setdefault(tool.name, tool)
        return found

    def _visible(self, name: str, ctx: ToolContext | None) -> bool:
        owner_only = name in self._owner_only or name not in self._tools
        return not owner_only or ctx is None or ctx.owner

    async def call(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        result = await self._call(call, ctx)
        # A name the model made up is counted as one label, never as itself.
        name = call.name if call.name in self._all() else "(unknown)"
        METRICS.count("lore_tool_calls", tool=name, outcome="error" if result.is_error else "ok")
        return result

    async def _call(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        tool = self._all().get(call.name) if self._visible(call.name, ctx) else None
        if tool is None:
            known = ", ".join(self.names(ctx)) or "none"
            return ToolResult(call, f"Error: unknown tool {call.name!r}. Tools: {known}.", True)
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError as exc:
            return ToolResult(call, f"Error: arguments are not valid JSON ({exc}).", True)
        if not isinstance(args, dict):
            return ToolResult(call, "Error: arguments must be a JSON object.", True)
        ctx.decision = None
        try:
            return ToolResult(call, await tool.run(args, ctx), False, ctx.decision)
        except DiskFullError:
            raise  # nothing the model can do about it: the turn is refused
        except (ToolError, LoreError) as exc:
            return ToolResult(call, f"Error: {exc}", True, ctx.decision)
        except (TypeError, KeyError, ValueError) as exc:
            # The type only: the message can quote the arguments, which quote the user.
            log.warning("tool %s rejected its arguments (%s)", call.name, type(exc).__name__)
            return ToolResult(call, f"Error: bad arguments for {call.name}: {exc}", True)


def required_str(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"'{name}' is required and must be a non-empty string")
    return value.strip()


def optional_str(args: dict[str, Any], name: str) -> str | None:
    """A string argument, or None when absent or blank."""
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ToolError(f"'{name}' must be a string")
    return value.strip()


def optional_int(args: dict[str, Any], name: str, default: int) -> int:
    value = args.get(name, default)
    if isinstance(value, bool):
        raise ToolError(f"'{name}' must be an integer")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ToolError(f"'{name}' must be an integer") from exc
