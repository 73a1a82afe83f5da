"""Structured long-term memory: the store, its CJK-aware index, and the prompt block."""

from lore.ports.memories import KINDS, Memory, MemoryStore, Source

__all__ = ["KINDS", "Memory", "MemoryStore", "Source"]
