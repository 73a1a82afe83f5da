"""Numbered PostgreSQL schema migrations, applied in order on open.

Each module `mNNN_<name>.py` defines `SQL` (one script, run in one transaction). A
migration is never edited once released: change the schema with a new number.
"""
