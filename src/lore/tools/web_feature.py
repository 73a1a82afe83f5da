"""The web feature: web_fetch and web_search, offered in the owner's conversations only.

web_fetch is offered unless `[web] fetch = false`; web_search only once `[web]` names a
search backend. Both take their trust level from `[tools.trust]` (default ask: every
page and every query is shown to the owner first), and one at `never` is not offered.
What they return is marked as untrusted web content, and the owner's prompt says what
that means.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.config import Config
from lore.core.feature import Feature
from lore.core.tools import Tool, ToolContext
from lore.tools.trust import TrustPolicy
from lore.tools.web_addresses import Resolver, system_resolver
from lore.tools.web_content import WEB_SECTION
from lore.tools.web_fetch import WebFetchTool
from lore.tools.web_search import WebSearchTool, search_backend

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["web_feature", "web_tools"]


def web_tools(config: Config, *, resolve: Resolver = system_resolver) -> list[Tool]:
    """The web tools this config offers (none at `never`)."""
    web = config.web
    policy = TrustPolicy(config.tools)
    patience = config.tools.approval_timeout
    tools: list[Tool] = []
    if web.fetch:
        tools.append(WebFetchTool(web, policy, patience=patience, resolve=resolve))
    if search_backend(web):
        tools.append(WebSearchTool(web, policy, patience=patience))
    return [tool for tool in tools if policy.for_tool(tool.name).level != "never"]


def web_feature(lore: Services) -> Feature:
    tools = web_tools(lore.config)

    def section(ctx: ToolContext) -> str | None:
        return WEB_SECTION if tools and ctx.owner and ctx.tools_enabled else None

    return Feature("web", tools=tools, sections=[section], owner_only=True)
