"""Lore: a personal AI assistant whose heart is layered long-term memory."""

__version__ = "0.1.0"

__all__ = ["__version__"]
