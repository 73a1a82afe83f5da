"""A chosen project: the folder `lore chat --project DIR` works in, and what the model is told.

With a project, the file tools and exec work there instead of the agent workspace,
AGENTS.md/SOUL.md/USER.md come from its root, and the session records its path. The
agent workspace keeps Lore's own memory: MEMORY.md, notes, skills, and Dream's files.

The terminal may open any folder (the owner typed it); the web page and the API only the
folders `[tools] projects` lists, so a page can never point the tools at an arbitrary path.
"""

from __future__ import annotations

import os
from pathlib import Path

from lore.config import Config
from lore.core.tools import ToolContext
from lore.errors import ConfigError, InvalidInputError

__all__ = ["choose_project", "project_choices", "project_section", "resolve_project"]


def resolve_project(path: str | Path) -> Path:
    """The project folder, fully resolved; one clear error when it is not a folder."""
    real = Path(os.path.realpath(Path(path).expanduser()))
    if not real.is_dir():
        raise ConfigError(f"project folder {str(path)!r} does not exist or is not a folder")
    return real


def project_choices(config: Config) -> list[Path]:
    """The folders `[tools] projects` allows, resolved, existing, without Lore's own home.
    An entry `DIR/*` stands for each folder directly in DIR (hidden ones left out)."""
    home = Path(os.path.realpath(config.home))
    found: list[Path] = []
    for entry in config.tools.projects:
        if entry.endswith(("/*", os.sep + "*")):
            parent = Path(entry[:-2]).expanduser()
            try:
                candidates = sorted(p for p in parent.iterdir() if not p.name.startswith("."))
            except OSError:
                continue
        else:
            candidates = [Path(entry).expanduser()]
        for candidate in candidates:
            real = Path(os.path.realpath(candidate))
            inside_home = real == home or home in real.parents
            if real.is_dir() and not inside_home and real not in found:
                found.append(real)
    return found


def choose_project(config: Config, text: str) -> Path:
    """The allowed project `text` names (its path as listed); InvalidInputError otherwise."""
    wanted = Path(os.path.realpath(Path(text.strip()).expanduser())) if text.strip() else None
    for choice in project_choices(config):
        if choice == wanted:
            return choice
    raise InvalidInputError(
        f"{text.strip()!r} is not one of the project folders in config.toml [tools] projects"
    )


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
