"""Conversations on disk: live sessions (JSONL), and later their exact archive."""
