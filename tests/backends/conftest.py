"""Fixtures for the PostgreSQL tests: the embedded server from `tests/postgres_server.py`,
started once per run; one database, migrated once and emptied before each test. They
carry the `postgres` marker and are skipped, with the reason, only when the server
cannot start. (What every backend does is in tests/contract/, over its registry.)
"""

from __future__ import annotations

import pytest

from tests.postgres_server import (
    EmbeddedPostgres,
    PostgresUnavailable,
    empty_lore_database,
    shared_server,
)


@pytest.fixture(scope="session")
def postgres_server() -> EmbeddedPostgres:
    try:
        return shared_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")


@pytest.fixture
def postgres_url(postgres_server: EmbeddedPostgres) -> str:
    """A migrated database, emptied for this test."""
    return empty_lore_database()


@pytest.fixture
def empty_postgres_url(postgres_server: EmbeddedPostgres) -> str:
    """A fresh database with no schema at all."""
    return postgres_server.create_database()
