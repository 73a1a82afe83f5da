"""The chat ledger: updates a chat channel received (leased until handled) and the ids of
messages Lore sent, kept a few days so a restart forgets neither."""

SQL = """
CREATE TABLE chat_received (
    id          bigserial   PRIMARY KEY,
    channel     text        NOT NULL,
    key         text        NOT NULL,
    payload     jsonb,
    received_at timestamptz NOT NULL,
    handled     boolean     NOT NULL DEFAULT false,
    lease_owner text,
    lease_until timestamptz,
    UNIQUE (channel, key)
);
CREATE INDEX chat_received_open ON chat_received (channel, id) WHERE NOT handled;
CREATE INDEX chat_received_age ON chat_received (received_at);
CREATE TABLE chat_sent (
    channel    text        NOT NULL,
    message_id text        NOT NULL,
    sent_at    timestamptz NOT NULL,
    PRIMARY KEY (channel, message_id)
);
CREATE INDEX chat_sent_age ON chat_sent (sent_at);
"""
