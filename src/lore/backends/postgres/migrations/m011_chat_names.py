"""Conversation names: the human name of each chat (a group's title, the other person's
name), kept fresh by its channel and shown beside the conversation key."""

SQL = """
CREATE TABLE chat_names (
    scope    text        PRIMARY KEY,
    name     text        NOT NULL,
    named_at timestamptz NOT NULL
);
"""
