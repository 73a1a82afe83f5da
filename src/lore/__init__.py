"""Lore: a personal AI assistant whose heart is layered long-term memory.

The public surface is small: the runtime (`build(config)`), its settings, the error
root, and the scripted provider for tests. Everything else is reached through them.
Names load lazily, so `lore --help` does not pay for what it does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The channels' key shapes, registered before anything reads a conversation key.
import lore.channels.scopes  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "Config",
    "LoreError",
    "Runtime",
    "ScriptedProvider",
    "__version__",
    "build",
    "load_config",
]

if TYPE_CHECKING:
    from lore.config import Config, load_config
    from lore.errors import LoreError
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import Runtime, build

_WHERE = {
    "Config": "lore.config",
    "Runtime": "lore.runtime",
    "build": "lore.runtime",
    "LoreError": "lore.errors",
    "ScriptedProvider": "lore.llm.scripted",
    "load_config": "lore.config",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'lore' has no attribute {name!r}")
