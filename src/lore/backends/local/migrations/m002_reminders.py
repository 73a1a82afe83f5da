"""Reminders: one row per reminder; `due_at` is the next fire time in Unix seconds (UTC).

The (status, due_at) index lets the scheduler find what is due among millions of rows
with one index range scan; (scope, status, due_at) serves a conversation's list.
"""

SQL = """
CREATE TABLE reminders (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    timezone TEXT NOT NULL,
    recurrence TEXT,
    anchor_at INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'cancelled')),
    channel TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    delivered_at INTEGER,
    delivery_count INTEGER NOT NULL DEFAULT 0,
    cancelled_at INTEGER,
    cancelled_by TEXT
);
CREATE INDEX reminders_due ON reminders (status, due_at);
CREATE INDEX reminders_scope ON reminders (scope, status, due_at);
"""
