"""The PostgreSQL backend: the same stores as `backends.local`, for many workers on one
database (pgvector for vectors, `FOR UPDATE SKIP LOCKED` leases for deliveries).

Chosen by `database_url` (or `LORE_DATABASE_URL`); SQLite and files stay the default.
"""
