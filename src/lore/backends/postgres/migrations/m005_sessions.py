"""Sessions: live transcripts as append-only rows, the exact archive and its index.

A live session is one `live_sessions` row per conversation key (its current session id
and metadata) and its `session_lines`, numbered 1, 2, ... within (key, session id): a
message or a mark, kept as the exact JSON text that was appended. `session_drafts` holds
the reply being streamed in a conversation, so a worker killed mid-reply leaves what the
user saw. An archived session is one `archived_sessions` row (the entry as written with
its transcript, and the index's entry once indexed, with its place in close order) and
its `archived_messages`. `archive_changes` numbers every archive write and link: the
archive's stamp and each transcript's fingerprint come from it.
"""

SQL = """
CREATE TABLE live_sessions (
    key               text    PRIMARY KEY,
    session_id        text    NOT NULL,
    created_at        text    NOT NULL,
    updated_at        text    NOT NULL,
    last_consolidated integer NOT NULL DEFAULT 0,
    extra             jsonb   NOT NULL DEFAULT '{}'
);
CREATE TABLE session_lines (
    key        text    NOT NULL,
    session_id text    NOT NULL,
    seq        integer NOT NULL,
    is_mark    boolean NOT NULL DEFAULT false,
    body       text    NOT NULL,
    PRIMARY KEY (key, session_id, seq)
);
CREATE TABLE session_drafts (
    key        text    PRIMARY KEY,
    session_id text    NOT NULL,
    index      integer NOT NULL,
    text       text    NOT NULL DEFAULT ''
);
CREATE SEQUENCE archive_changes;
CREATE TABLE archived_sessions (
    session_id      text    PRIMARY KEY,
    key             text    NOT NULL,
    transcript_path text    NOT NULL UNIQUE,
    written         jsonb   NOT NULL,
    metadata        jsonb   NOT NULL,
    message_count   integer NOT NULL,
    version         bigint  NOT NULL,
    entry           jsonb,
    closed          bigint
);
CREATE INDEX archived_sessions_closed ON archived_sessions (closed) WHERE closed IS NOT NULL;
CREATE TABLE archived_messages (
    session_id text    NOT NULL REFERENCES archived_sessions ON DELETE CASCADE,
    seq        integer NOT NULL,
    body       text    NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""
