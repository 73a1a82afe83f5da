"""Backends: the same ports on different storage (local: SQLite + files)."""
