"""Structured long-term memories: versions, their audit history, and a CJK-aware index.

`memory_fts` holds pre-tokenised text (see `lore.text`): a scope tag, words
(Latin, Cyrillic stems, jieba segments), CJK character unigrams and bigrams, keywords.
"""

SQL = """
CREATE TABLE memories (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    scope          TEXT    NOT NULL,
    content        TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    keywords       TEXT    NOT NULL DEFAULT '[]',
    author         TEXT    NOT NULL,
    source_session TEXT,
    source_message INTEGER,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL,
    expires_at     TEXT,
    status         TEXT    NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'superseded', 'forgotten')),
    superseded_by  INTEGER REFERENCES memories (id),
    content_key    TEXT
);

-- The block's order: profile first, then most recently updated. Covers the count too.
CREATE INDEX memories_block ON memories (
    scope, (kind = 'profile') DESC, updated_at DESC, id DESC, expires_at
) WHERE status = 'active';

-- One active copy of a text per scope. The hash leads, so the planner never picks this
-- index over memories_block for a query by scope.
CREATE UNIQUE INDEX memories_dedupe ON memories (content_key, scope) WHERE status = 'active';

CREATE INDEX memories_chain ON memories (superseded_by) WHERE superseded_by IS NOT NULL;

CREATE TABLE memory_audit (
    id        INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories (id),
    scope     TEXT    NOT NULL,
    action    TEXT    NOT NULL CHECK (action IN ('add', 'update', 'forget', 'import')),
    actor     TEXT    NOT NULL,
    via       TEXT    NOT NULL,
    at        TEXT    NOT NULL,
    detail    TEXT
);

CREATE INDEX memory_audit_memory ON memory_audit (memory_id);

CREATE VIRTUAL TABLE memory_fts USING fts5 (
    scope_tag, words, grams, keywords,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
