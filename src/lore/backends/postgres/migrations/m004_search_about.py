"""Each search entry keeps the span of time its text is about ("last week", "昨天"),
resolved against its own date: `about_start` and `about_end`, Unix seconds, [start, end).
Entries indexed before get it from `lore index rebuild`."""

SQL = """
ALTER TABLE search_entries ADD COLUMN about_start double precision;
ALTER TABLE search_entries ADD COLUMN about_end double precision;
"""
