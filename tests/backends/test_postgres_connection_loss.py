"""A PostgreSQL connection lost under a worker (the server restarted, a failover, an
idle connection cut) is a StoreError, which the scheduler and the CLI handle, and the
next call gets a fresh connection."""

from __future__ import annotations

import psycopg
import pytest

from lore.backends.postgres.database import PostgresDatabase
from lore.errors import StoreError
from tests.postgres_server import EmbeddedPostgres

pytestmark = pytest.mark.postgres


def _cut_connections(server: EmbeddedPostgres, url: str) -> int:
    database = url.rsplit("/", 1)[1]
    with psycopg.connect(server.admin_url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (database,),
        ).fetchall()
    return len(rows)


@pytest.mark.parametrize("call", ["read", "write"])
def test_a_lost_connection_is_a_store_error_and_the_next_call_reconnects(
    postgres_server: EmbeddedPostgres, postgres_url: str, call: str
) -> None:
    db = PostgresDatabase(postgres_url, min_size=1, max_size=1)
    try:
        assert db.fetch_one("SELECT 1 AS one") == {"one": 1}
        assert _cut_connections(postgres_server, postgres_url) >= 1
        with pytest.raises(StoreError, match="lost its connection"):
            if call == "read":
                db.fetch_one("SELECT 1 AS one")
            else:
                with db.atomic() as conn:
                    conn.execute("SELECT 1 AS one")
        assert db.fetch_one("SELECT 2 AS two") == {"two": 2}
    finally:
        db.close()
