"""How many memories each scope holds, kept by triggers, so the memory block's "N older
memories not shown" never counts a scope's rows.

`memory_counts` holds the active memories of each scope (expired ones included: expiry
is a time, not a write). The block subtracts the expired ones, found through a partial
index that holds only memories with an expiry. Running it again recounts.
"""

SQL = """
CREATE TABLE IF NOT EXISTS memory_counts (
    scope  TEXT PRIMARY KEY,
    active INTEGER NOT NULL
) WITHOUT ROWID;

DELETE FROM memory_counts;
INSERT INTO memory_counts (scope, active)
    SELECT scope, count(*) FROM memories WHERE status = 'active' GROUP BY scope;

CREATE INDEX IF NOT EXISTS memories_expiring ON memories (scope, expires_at)
    WHERE status = 'active' AND expires_at IS NOT NULL;

CREATE TRIGGER IF NOT EXISTS memory_counts_added AFTER INSERT ON memories
WHEN new.status = 'active'
BEGIN
    INSERT INTO memory_counts (scope, active) VALUES (new.scope, 1)
        ON CONFLICT (scope) DO UPDATE SET active = active + 1;
END;

CREATE TRIGGER IF NOT EXISTS memory_counts_changed AFTER UPDATE OF status, scope ON memories
WHEN (old.status = 'active') != (new.status = 'active') OR old.scope != new.scope
BEGIN
    UPDATE memory_counts SET active = active - 1
        WHERE scope = old.scope AND old.status = 'active';
    INSERT INTO memory_counts (scope, active) SELECT new.scope, 1 WHERE new.status = 'active'
        ON CONFLICT (scope) DO UPDATE SET active = active + 1;
END;

CREATE TRIGGER IF NOT EXISTS memory_counts_deleted AFTER DELETE ON memories
WHEN old.status = 'active'
BEGIN
    UPDATE memory_counts SET active = active - 1 WHERE scope = old.scope;
END;
"""
