"""Helpers for the file and shell tool tests: a project folder, a context, one tool call."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.config import Config, ToolsConfig
from lore.core.approval import Approver
from lore.core.tools import ToolContext, ToolRegistry, ToolResult
from lore.llm.base import ToolCall
from lore.runtime import Runtime, build
from lore.tools.feature import owner_tools
from lore.tools.workbench import Workbench


def with_tools(config: Config, **settings: Any) -> Config:
    return replace(config, tools=replace(config.tools, **settings))


def registry(config: Config) -> ToolRegistry:
    tools = ToolRegistry()
    for tool in owner_tools(Workbench.from_config(config)):
        tools.add(tool, owner_only=True)
    return tools


def context(
    project: Path | None = None,
    *,
    approver: Approver | None = None,
    scope: str = "cli:default",
    owner: bool = True,
) -> ToolContext:
    return ToolContext(
        scope=scope,
        author="john",
        session_id="s1",
        message_index=0,
        now=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        timezone="UTC",
        owner=owner,
        project=project,
        approver=approver,
    )


async def call(
    tools: ToolRegistry, name: str, args: dict[str, Any], ctx: ToolContext
) -> ToolResult:
    import json

    return await tools.call(ToolCall("call_1", name, json.dumps(args, ensure_ascii=False)), ctx)


def lore_with_tools(lore: Runtime, **settings: Any) -> Runtime:
    """A fresh runtime on the same home, provider and clock, with [tools] settings."""
    config = with_tools(lore.config, **settings) if settings else lore.config
    return build(config, provider=lore.provider, clock=lore.clock)


__all__ = ["ToolsConfig", "call", "context", "lore_with_tools", "registry", "with_tools"]
