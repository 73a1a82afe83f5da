"""The search index: one table of entries (memories, note chunks, archived messages),
each with its pre-tokenised terms (a tsvector, weights as in m001: A words, B CJK
grams, C extra text) and, once embedded, its vector (pgvector, HNSW, cosine).

Triggers on `memories` keep the index in step with every memory write, whoever makes
it: a new or changed memory is queued for indexing (tokenising needs Python), and a
memory that stops being active (forgotten, superseded, deleted) leaves the index in
the same transaction.
"""

SQL = """
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE search_entries (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope      text             NOT NULL,
    kind       text             NOT NULL CHECK (kind IN ('memory', 'note', 'message')),
    source     text             NOT NULL,            -- '' (memory), file path, session id
    locator    bigint           NOT NULL,            -- memory id, first line, message index
    at         double precision NOT NULL,            -- Unix seconds
    expires_at double precision,                     -- memories only
    speaker    text             NOT NULL DEFAULT '', -- who said it, or the note's heading
    text       text             NOT NULL,            -- what is searched and shown
    context    text             NOT NULL DEFAULT '', -- embedded with the text, never shown
    terms      tsvector         NOT NULL,
    embedding  vector(384)
);
CREATE UNIQUE INDEX search_entries_source ON search_entries (kind, source, locator);
CREATE INDEX search_entries_scope ON search_entries (scope, id);
CREATE INDEX search_entries_terms ON search_entries USING gin (scope, terms);
CREATE INDEX search_entries_unembedded ON search_entries (id) WHERE embedding IS NULL;
CREATE INDEX search_entries_embedding ON search_entries
    USING hnsw (embedding vector_cosine_ops);

-- Files and archived sessions already read, so a sync re-reads only what changed.
CREATE TABLE search_sources (
    kind     text   NOT NULL,
    source   text   NOT NULL,
    scope    text   NOT NULL,
    mtime_ns bigint NOT NULL,
    size     bigint NOT NULL,
    digest   text   NOT NULL,
    PRIMARY KEY (kind, source)
);

-- Memories written since the index last caught up.
CREATE TABLE search_queue (
    memory_id bigint PRIMARY KEY
);

CREATE TABLE search_state (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE FUNCTION search_memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' AND NEW.status = 'active' THEN
        INSERT INTO search_queue (memory_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'DELETE' OR OLD.status = 'active' THEN
        DELETE FROM search_queue WHERE memory_id = OLD.id;
        DELETE FROM search_entries
            WHERE kind = 'memory' AND source = '' AND locator = OLD.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER search_memory_added AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION search_memory_changed();
CREATE TRIGGER search_memory_changed AFTER UPDATE OF content, keywords, expires_at, status
    ON memories FOR EACH ROW EXECUTE FUNCTION search_memory_changed();
CREATE TRIGGER search_memory_deleted AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION search_memory_changed();
"""
