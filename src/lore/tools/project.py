"""A chosen project: the folder `lore chat --project DIR` works in, and what the model is told.

With a project, the file tools and exec work there instead of the agent workspace,
AGENTS.md/SOUL.md/USER.md come from its root, and the session records its path. The
agent workspace keeps Lore's own memory: MEMORY.md, notes, skills, and Dream's files.
"""

from __future__ import annotations

import os
from pathlib import Path

from lore.core.tools import ToolContext
from lore.errors import ConfigError

__all__ = ["project_section", "resolve_project"]


def resolve_project(path: str | Path) -> Path:
    """The project folder, fully resolved; one clear error when it is not a folder."""
    real = Path(os.path.realpath(Path(path).expanduser()))
    if not real.is_dir():
        raise ConfigError(f"project folder {str(path)!r} does not exist or is not a folder")
    return real


def project_section(ctx: ToolContext) -> str | None:
    if ctx.project is None or not ctx.owner:
        return None
    return (
        "# Project\n\n"
        f"You are working in the project folder {ctx.project}. AGENTS.md, SOUL.md and USER.md "
        "above, when shown, are this project's. File tools and exec work inside this folder; "
        "give paths relative to it. Facts about this project's code and files belong in the "
        "project's own files (ask first) or in a memory that names the project; never put "
        "them into SOUL.md or USER.md, which are about you and the owner across all projects."
    )
