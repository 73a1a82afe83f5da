"""Fixtures for the store suites that run over every backend.

`backend` is "local" (SQLite in a temporary directory) or "postgres" (the embedded
server from `tests/postgres_server.py`, started once per run; one database, migrated
once and emptied before each test). Postgres tests carry the
`postgres` marker and are skipped, with the reason, only when the server cannot start.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_server import (
    EmbeddedPostgres,
    PostgresUnavailable,
    empty_lore_database,
    shared_server,
)

BACKENDS = ["local", pytest.param("postgres", marks=pytest.mark.postgres)]


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


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """The backend's database handle: a SQLite `Database` or a `PostgresDatabase`."""
    if backend == "local":
        from lore.backends.local.database import Database

        local = Database(tmp_path / "lore.db")
        yield local
        local.close()
    else:
        from lore.backends.postgres.database import PostgresDatabase

        pg = PostgresDatabase(request.getfixturevalue("postgres_url"), max_size=4)
        yield pg
        pg.close()
