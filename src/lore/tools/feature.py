"""The tools feature: file tools, exec and skills, offered only in the owner's conversations.

Every tool here is owner-only: a group member or an API client without the owner's trust
never sees them in the tool list, and a call to one is answered as an unknown tool.

The web tools (web_fetch, web_search) are a feature of their own: `lore.tools.web_feature`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature
from lore.core.tools import Tool, ToolContext
from lore.tools.exec import ExecTool
from lore.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from lore.tools.find import GlobTool, GrepTool
from lore.tools.project import project_section
from lore.tools.skills import LoadSkillTool, load_skills, skills_section
from lore.tools.workbench import Workbench

if TYPE_CHECKING:
    from lore.core.services import Services

__all__ = ["owner_tools", "tools_feature"]


def owner_tools(bench: Workbench) -> list[Tool]:
    return [
        ReadFileTool(bench),
        ListDirTool(bench),
        GlobTool(bench),
        GrepTool(bench),
        WriteFileTool(bench),
        EditFileTool(bench),
        ExecTool(bench),
        LoadSkillTool(bench),
    ]


def tools_feature(lore: Services) -> Feature:
    workspace = lore.config.workspace

    def skills(ctx: ToolContext) -> str | None:
        if not ctx.owner:
            return None
        found = load_skills(workspace)
        for skill in found.found:
            if skill.always:  # its body is in the prompt, as if loaded
                ctx.provenance.loaded(skill.name)
        return skills_section(found, loadable=ctx.tools_enabled)

    return Feature(
        "tools",
        tools=owner_tools(Workbench.from_config(lore.config)),
        sections=[project_section, skills],
        owner_only=True,  # the registry hides them outside the owner's conversations
    )
