"""The search index: one table of entries (memories, note chunks, archived messages).

`search_fts` holds their CJK-aware terms (rowid = entry id, see `lore.text`),
`search_vectors` their int8 embeddings. Triggers on `memories` keep the index in step
with every memory write, whoever makes it: a new or changed memory is queued for
indexing (tokenising needs Python), and a memory that stops being active (forgotten,
superseded, deleted) leaves the index in the same transaction. A forgotten memory's
terms are also merged out of the FTS segments at once, so no copy of them survives.
"""

SQL = """
-- AUTOINCREMENT: ids only grow, so a vector cache can load just what is newer.
CREATE TABLE search_entries (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('memory', 'note', 'message')),
    source     TEXT    NOT NULL,            -- '' (memory), file path (note), session id
    locator    INTEGER NOT NULL,            -- memory id, first line, message index
    at         REAL    NOT NULL,            -- Unix seconds
    expires_at REAL,                        -- memories only
    speaker    TEXT    NOT NULL DEFAULT '', -- who said it (message), heading (note)
    text       TEXT    NOT NULL,            -- what is searched and shown
    context    TEXT    NOT NULL DEFAULT '', -- embedded with the text, never shown
    embedded   INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX search_entries_source ON search_entries (kind, source, locator);
CREATE INDEX search_entries_scope ON search_entries (scope);
CREATE INDEX search_entries_unembedded ON search_entries (id) WHERE embedded = 0;

CREATE TABLE search_vectors (
    entry_id INTEGER PRIMARY KEY REFERENCES search_entries (id) ON DELETE CASCADE,
    scale    REAL NOT NULL,
    vector   BLOB NOT NULL
);

CREATE VIRTUAL TABLE search_fts USING fts5 (
    scope_tag, words, grams, keywords,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Files and archived sessions already read, so a sync re-reads only what changed.
CREATE TABLE search_sources (
    kind     TEXT    NOT NULL,
    source   TEXT    NOT NULL,
    scope    TEXT    NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size     INTEGER NOT NULL,
    digest   TEXT    NOT NULL,
    PRIMARY KEY (kind, source)
) WITHOUT ROWID;

-- Memories written since the index last caught up.
CREATE TABLE search_queue (
    memory_id INTEGER PRIMARY KEY
);

CREATE TABLE search_state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO search_state (key, value) VALUES ('generation', '0');

CREATE TRIGGER search_memory_added AFTER INSERT ON memories
WHEN new.status = 'active'
BEGIN
    INSERT OR IGNORE INTO search_queue (memory_id) VALUES (new.id);
END;

CREATE TRIGGER search_memory_changed AFTER UPDATE OF content, keywords, expires_at ON memories
WHEN new.status = 'active'
BEGIN
    INSERT OR IGNORE INTO search_queue (memory_id) VALUES (new.id);
END;

CREATE TRIGGER search_memory_retired AFTER UPDATE OF status ON memories
WHEN old.status = 'active' AND new.status != 'active'
BEGIN
    DELETE FROM search_queue WHERE memory_id = old.id;
    DELETE FROM search_fts WHERE rowid IN (
        SELECT id FROM search_entries WHERE kind = 'memory' AND source = '' AND locator = old.id
    );
    DELETE FROM search_entries WHERE kind = 'memory' AND source = '' AND locator = old.id;
    UPDATE search_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    -- Forgetting erases: merge the deleted terms out of the FTS segments now.
    INSERT INTO search_fts (search_fts) SELECT 'optimize' WHERE new.status = 'forgotten';
END;

CREATE TRIGGER search_memory_deleted AFTER DELETE ON memories
BEGIN
    DELETE FROM search_queue WHERE memory_id = old.id;
    DELETE FROM search_fts WHERE rowid IN (
        SELECT id FROM search_entries WHERE kind = 'memory' AND source = '' AND locator = old.id
    );
    DELETE FROM search_entries WHERE kind = 'memory' AND source = '' AND locator = old.id;
    UPDATE search_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
    INSERT INTO search_fts (search_fts) VALUES ('optimize');
END;
"""
