"""Skills: instructions for a kind of task, each in `skills/<name>/SKILL.md` of the workspace.

A SKILL.md starts with a small front matter block:

    ---
    name: release-notes
    description: Write release notes from the git log, in the project's style.
    always: false
    ---
    (the instructions)

`always: true` puts the whole skill into every system prompt of the owner's
conversations; the others appear as one line each, and the model reads one with
`load_skill(name)` when a task fits. A skill may ship scripts beside its SKILL.md; they
run only through `exec` and its trust rules. The front matter is read by a tiny parser
(`key: value` lines, optional quotes), not a YAML library: nothing in it is executed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.core.approval import Action
from lore.core.tools import ToolContext, required_str
from lore.errors import ToolError
from lore.tools.workbench import Workbench

__all__ = [
    "LoadSkillTool",
    "Skill",
    "Skills",
    "load_skills",
    "parse_front_matter",
    "skills_section",
]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_MAX_SKILL_BYTES = 64 * 1024
_MAX_FILES_LISTED = 50


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    always: bool
    body: str
    directory: Path


@dataclass(frozen=True)
class Skills:
    found: list[Skill]
    problems: list[str]  # one line per SKILL.md that could not be used

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.found if skill.name == name), None)


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """The `key: value` pairs between the leading `---` lines, and the rest of the text."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text.strip()
    values: dict[str, str] = {}
    for index, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return values, "\n".join(lines[index + 1 :]).strip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"front matter line {index + 1} is not 'key: value'")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip().lower()] = value
    raise ValueError("front matter has no closing '---'")


def load_skills(workspace: Path) -> Skills:
    """Every usable skill under `workspace/skills`, by name, and what was wrong with the rest."""
    found: list[Skill] = []
    problems: list[str] = []
    folder = workspace / "skills"
    try:
        candidates = sorted(path for path in folder.iterdir() if (path / "SKILL.md").is_file())
    except (FileNotFoundError, NotADirectoryError):
        return Skills([], [])
    names: set[str] = set()
    for directory in candidates:
        try:
            skill = _read_skill(directory)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"skills/{directory.name}/SKILL.md: {exc}")
            continue
        if skill.name in names:
            problems.append(f"skills/{directory.name}/SKILL.md: the name {skill.name!r} is taken")
            continue
        names.add(skill.name)
        found.append(skill)
    return Skills(found, problems)


def _read_skill(directory: Path) -> Skill:
    path = directory / "SKILL.md"
    if path.stat().st_size > _MAX_SKILL_BYTES:
        raise ValueError(f"larger than {_MAX_SKILL_BYTES // 1024} KB")
    meta, body = parse_front_matter(path.read_text(encoding="utf-8"))
    name = meta.get("name") or directory.name
    if not _NAME.match(name):
        raise ValueError(f"the name {name!r} may use only letters, digits, '.', '_' and '-'")
    description = " ".join(meta.get("description", "").split())
    if not description:
        raise ValueError("the front matter needs a description")
    always = meta.get("always", "false").strip().lower()
    if always not in ("true", "false", "yes", "no"):
        raise ValueError(f"'always' must be true or false, not {always!r}")
    return Skill(name, description, always in ("true", "yes"), body, directory)


def skills_section(skills: Skills, *, loadable: bool = True) -> str | None:
    """The system prompt's skills section: always-on skills whole, the others one line
    each (only when the model can call load_skill)."""
    if not skills.found or not (loadable or any(s.always for s in skills.found)):
        return None
    parts = [
        "# Skills\n\nSkills are the owner's instructions for particular kinds of task. "
        "When a task fits one listed here, call load_skill(name) first and follow it. A "
        "skill's scripts run only through exec, under the same trust rules as any command."
    ]
    listed = [f"- {s.name}: {s.description}" for s in skills.found if loadable and not s.always]
    if listed:
        parts.append("\n".join(listed))
    for skill in skills.found:
        if skill.always:
            parts.append(f"## Skill: {skill.name} (always on)\n\n{skill.body}")
    return "\n\n".join(parts)


class LoadSkillTool:
    name = "load_skill"
    description = (
        "Read the full instructions of one skill listed under # Skills, by name, with the "
        "folder of its files. Follow them for the task at hand."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The skill's name"}},
        "required": ["name"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        name = required_str(args, "name")
        skills = load_skills(self.bench.workspace)
        skill = skills.get(name)
        if skill is None:
            known = ", ".join(s.name for s in skills.found) or "none"
            raise ToolError(f"there is no skill {name!r}. Skills: {known}.")
        verdict = self.bench.policy.for_tool(self.name)
        await self.bench.authorize(ctx, Action(self.name, f"load the skill {name}"), verdict)
        ctx.provenance.loaded(skill.name)
        files = _files(skill.directory)
        listing = "\n".join(f"- {f}" for f in files) if files else "(only SKILL.md)"
        return (
            f"# Skill: {skill.name}\n\n{skill.body}\n\n"
            f"Its folder: {skill.directory}\nFiles:\n{listing}"
        )


def _files(directory: Path) -> list[str]:
    files = []
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != "SKILL.md":
            files.append(str(path.relative_to(directory)))
        if len(files) >= _MAX_FILES_LISTED:
            break
    return files
