"""The chat ledger: updates a chat channel received (leased until handled) and the ids of
messages Lore sent, kept a few days so a restart forgets neither."""

SQL = """
CREATE TABLE IF NOT EXISTS chat_received (
    id          INTEGER PRIMARY KEY,
    channel     TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    payload     TEXT,
    received_at REAL    NOT NULL,
    handled     INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until REAL,
    UNIQUE (channel, key)
);
CREATE INDEX IF NOT EXISTS chat_received_open ON chat_received (channel, handled, id);
CREATE INDEX IF NOT EXISTS chat_received_age ON chat_received (received_at);
CREATE TABLE IF NOT EXISTS chat_sent (
    channel    TEXT NOT NULL,
    message_id TEXT NOT NULL,
    sent_at    REAL NOT NULL,
    PRIMARY KEY (channel, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chat_sent_age ON chat_sent (sent_at);
"""
