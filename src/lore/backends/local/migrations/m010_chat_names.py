"""Conversation names: the human name of each chat (a group's title, the other person's
name), kept fresh by its channel and shown beside the conversation key."""

SQL = """
CREATE TABLE IF NOT EXISTS chat_names (
    scope    TEXT PRIMARY KEY,
    name     TEXT NOT NULL,
    named_at REAL NOT NULL
) WITHOUT ROWID;
"""
