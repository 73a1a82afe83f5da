"""Structured long-term memory: the store, its CJK-aware index, and the prompt block."""

from lore.backends.local.memories import MemoryStore
from lore.ports.memories import KINDS, Memory, Source

__all__ = ["KINDS", "Memory", "MemoryStore", "Source"]
