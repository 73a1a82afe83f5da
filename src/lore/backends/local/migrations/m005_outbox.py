"""The outbox: what must reach a person, held until a channel delivered it.

One row per item under a unique idempotency key; a lease (owner, until) marks the
process delivering it. Ready items are found by (status, available_at).
"""

SQL = """
CREATE TABLE IF NOT EXISTS outbox (
    id           INTEGER PRIMARY KEY,
    key          TEXT    NOT NULL UNIQUE,
    scope        TEXT    NOT NULL,
    channel      TEXT    NOT NULL DEFAULT '',
    kind         TEXT    NOT NULL,
    payload      TEXT    NOT NULL,
    status       TEXT    NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'delivered', 'failed')),
    created_at   INTEGER NOT NULL,
    available_at INTEGER NOT NULL,
    lease_owner  TEXT,
    lease_until  REAL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    delivered_at INTEGER,
    delivered_by TEXT,
    last_error   TEXT
);
CREATE INDEX IF NOT EXISTS outbox_ready ON outbox (status, available_at);
CREATE INDEX IF NOT EXISTS outbox_scope ON outbox (scope, status, id);
"""
