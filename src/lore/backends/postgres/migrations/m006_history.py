"""The history log: summaries of conversation that left the window, numbered by cursor
across every conversation, and the cursor Dream has fully processed."""

SQL = """
CREATE TABLE history (
    cursor      bigint PRIMARY KEY,
    timestamp   text   NOT NULL,
    session_key text   NOT NULL,
    content     text   NOT NULL
);
CREATE INDEX history_by_key ON history (session_key, cursor);
CREATE TABLE history_state (
    name  text   PRIMARY KEY,
    value bigint NOT NULL
);
"""
