"""How to add an optional part (an extra) to the Lore that is running.

The distribution is `lore-assistant` ("lore" on the package index is another project);
the command and the import name are `lore`. A hint names the installer of the environment
this Lore runs in, so what it installs lands where this Lore imports from: pipx's or uv's
tool environment, else this interpreter's own pip (never whichever `pip` is first on PATH).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

__all__ = ["DISTRIBUTION", "install_hint"]

DISTRIBUTION = "lore-assistant"


def install_hint(extra: str, *, prefix: str | None = None, python: str | None = None) -> str:
    """The command that adds `extra` (`line`, `telegram`, `postgres`, `local`) here."""
    where = Path(prefix or sys.prefix).as_posix()
    wanted = f"'{DISTRIBUTION}[{extra}]'"
    if "/pipx/venvs/" in where:
        return f"pipx install --force {wanted}"
    if "/uv/tools/" in where:
        return f"uv tool install --force {wanted}"
    return f"{shlex.quote(python or sys.executable)} -m pip install {wanted}"
