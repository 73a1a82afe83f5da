"""The embedded backend: SQLite (database, migrations, stores) and files (JSONL, Markdown, git)."""
