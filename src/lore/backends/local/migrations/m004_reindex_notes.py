"""Read every note again: the rules for which scope a note's text belongs to changed.

Before, any heading ending in "· key" moved the text under it to that conversation, and
any other heading moved it to the owner, so a heading the model wrote inside one
conversation's notes could show them to another. Notes are derived data: dropping their
entries (vectors cascade) and file records makes the next sync index them again.
"""

SQL = """
DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_entries WHERE kind = 'note');
DELETE FROM search_entries WHERE kind = 'note';
DELETE FROM search_sources WHERE kind = 'note';
UPDATE search_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation';
"""
