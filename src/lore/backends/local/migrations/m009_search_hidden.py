"""What stays out of the index after a memory was forgotten: a turn of a session (by the
index of its user message) or a note chunk (by its text's digest). Marks, never text, so
an index rebuild leaves the forgotten turn out again without keeping its words."""

SQL = """
CREATE TABLE IF NOT EXISTS search_hidden (
    kind   TEXT NOT NULL,
    source TEXT NOT NULL,
    mark   TEXT NOT NULL,
    PRIMARY KEY (kind, source, mark)
) WITHOUT ROWID;
"""
