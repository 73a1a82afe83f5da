"""`lore skills list`: the skills in the workspace, and any SKILL.md that cannot be used."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lore.cli.common import add_common, load_runtime, print_json, show_usage

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "skills",
        help="list the skills in the workspace",
        description="Skills are folders skills/<name>/ in the workspace, each with a "
        "SKILL.md (front matter: name, description, always). Always-on skills are in every "
        "prompt of the owner's conversations; the others are loaded with load_skill.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="every skill: name, always-on or not, description")
    add_common(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_list)
    parser.set_defaults(func=lambda args: show_usage(parser))


def _list(args: argparse.Namespace) -> int:
    from lore.tools.skills import load_skills

    config = load_runtime(args).config
    skills = load_skills(config.workspace)
    if args.json:
        print_json(
            {
                "skills": [
                    {
                        "name": s.name,
                        "description": s.description,
                        "always": s.always,
                        "path": str(s.directory / "SKILL.md"),
                    }
                    for s in skills.found
                ],
                "problems": skills.problems,
            }
        )
        return 0
    if not skills.found:
        print(f"No skills in {config.workspace / 'skills'}.")
    width = max((len(s.name) for s in skills.found), default=0)
    for skill in skills.found:
        mark = "always" if skill.always else "      "
        print(f"{skill.name:<{width}}  {mark}  {skill.description}")
    for problem in skills.problems:
        print(f"lore: skipped {problem}", file=sys.stderr)
    return 0
