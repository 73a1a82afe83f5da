"""A reply being streamed keeps the `why` record its turn had when its first text was
shown, so a reply kept after a crash still says what it rested on."""

SQL = """
ALTER TABLE session_drafts ADD COLUMN IF NOT EXISTS why jsonb;
"""
