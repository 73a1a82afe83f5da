"""Lore: a personal AI assistant whose heart is layered long-term memory.

The public surface is small: `Memory` / `AsyncMemory` (Lore's memory inside your own
program) and `Client` / `AsyncClient` (the same methods against `lore serve`) with the
records they answer with; the runtime (`build(config)`), its settings, the error root,
and the scripted provider for tests. Everything else is reached through them. Names
load lazily, so `lore --help` does not pay for what it does not use. These names and
their signatures are pinned by tests/test_public_api.py and change only as the README's
deprecation policy says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The channels' key shapes, registered before anything reads a conversation key.
import lore.channels.scopes  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "Added",
    "AsyncClient",
    "AsyncMemory",
    "Client",
    "Config",
    "Forgotten",
    "HistoryEntry",
    "LoreError",
    "Memory",
    "MemoryBlock",
    "MemoryRecord",
    "ReminderRecord",
    "Runtime",
    "ScriptedProvider",
    "SearchHit",
    "__version__",
    "build",
    "load_config",
]

if TYPE_CHECKING:
    from lore.client import AsyncClient, Client
    from lore.config import Config, load_config
    from lore.embedded import AsyncMemory, Memory
    from lore.errors import LoreError
    from lore.llm.scripted import ScriptedProvider
    from lore.records import (
        Added,
        Forgotten,
        HistoryEntry,
        MemoryBlock,
        MemoryRecord,
        ReminderRecord,
        SearchHit,
    )
    from lore.runtime import Runtime, build

_WHERE = {
    "Memory": "lore.embedded",
    "AsyncMemory": "lore.embedded",
    "Client": "lore.client",
    "AsyncClient": "lore.client",
    "Added": "lore.records",
    "Forgotten": "lore.records",
    "HistoryEntry": "lore.records",
    "MemoryBlock": "lore.records",
    "MemoryRecord": "lore.records",
    "ReminderRecord": "lore.records",
    "SearchHit": "lore.records",
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
