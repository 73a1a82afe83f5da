"""`lore completion SHELL`: the shell code that completes `lore`'s commands and options.

The script asks `lore` itself what may come next (argcomplete), so it never goes stale:
a new command or option completes as soon as it exists.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["SHELLS", "register"]

SHELLS = ("bash", "zsh", "fish")

_HOW = {
    "bash": 'eval "$(lore completion bash)"   # in ~/.bashrc',
    "zsh": 'eval "$(lore completion zsh)"    # in ~/.zshrc, after compinit',
    "fish": "lore completion fish | source   # in ~/.config/fish/config.fish",
}


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "completion",
        help="print shell completion for bash, zsh or fish",
        description="Print the code that makes your shell complete lore's commands and "
        "options. Load it from your shell's start-up file: " + "; ".join(_HOW.values()),
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    print(shellcode(["lore"], shell=args.shell), end="")
    return 0
