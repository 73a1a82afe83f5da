"""Structured long-term memory: the store, its CJK-aware index, and the prompt block."""

from lore.memory.records import KINDS, Memory, Source
from lore.memory.store import MemoryStore

__all__ = ["KINDS", "Memory", "MemoryStore", "Source"]
