"""`lore config show`: the effective settings, with keys redacted."""

from __future__ import annotations

import argparse
from typing import Any

from lore.cli.common import add_common, load_runtime, print_json, show_usage

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config", help="show the effective settings", description="Inspect Lore's settings."
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="print the effective settings (flag > environment > config.toml > default)",
        description="Print the effective settings with API keys redacted.",
    )
    add_common(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run_show)
    parser.set_defaults(func=lambda args: show_usage(parser))


def run_show(args: argparse.Namespace) -> int:
    lore = load_runtime(args)
    data = lore.config.redacted()
    data["config_file"] = str(lore.config.config_path)
    data["workspace"] = str(lore.config.workspace)
    if args.json:
        print_json(data)
        return 0
    for line in _flatten(data):
        print(line)
    return 0


def _flatten(data: dict[str, Any], prefix: str = "") -> list[str]:
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.extend(_flatten(value, f"{prefix}{key}."))
        else:
            lines.append(
                f"{prefix}{key} = {value!r}"
                if isinstance(value, str)
                else f"{prefix}{key} = {value}"
            )
    return lines
