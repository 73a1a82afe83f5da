"""Numbered schema migrations, applied in order on open.

Each module `mNNN_<name>.py` defines `SQL` (a script) or `apply(conn)`. A migration is
never edited once released: change the schema with a new number.
"""
