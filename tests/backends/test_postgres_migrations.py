"""PostgreSQL migrations: an empty database gains every table on open, once, even when
several workers open it at the same moment; the numbers follow the SQLite scheme."""

from __future__ import annotations

import threading

import pytest

from lore.backends.postgres.database import PostgresDatabase, migrations

pytestmark = pytest.mark.postgres


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    numbers = [number for number, _, _ in migrations()]
    assert numbers == list(range(1, len(numbers) + 1))


def test_an_empty_database_is_migrated_once_by_workers_opening_it_together(
    empty_postgres_url: str,
) -> None:
    opened: list[PostgresDatabase] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def open_it() -> None:
        try:
            barrier.wait()
            opened.append(PostgresDatabase(empty_postgres_url, max_size=1))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=open_it) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    try:
        assert not errors, errors
        db = opened[0]
        assert db.schema_version == len(migrations())
        applied = db.fetch_all("SELECT number FROM lore_migrations ORDER BY number")
        assert [row["number"] for row in applied] == list(range(1, len(migrations()) + 1))
        tables = {
            row["tablename"]
            for row in db.fetch_all("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        assert {"memories", "memory_audit", "reminders", "outbox", "search_entries"} <= tables
    finally:
        for db in opened:
            db.close()


def test_reopening_a_migrated_database_changes_nothing(postgres_url: str) -> None:
    first = PostgresDatabase(postgres_url)
    version = first.schema_version
    first.close()
    again = PostgresDatabase(postgres_url)
    try:
        assert again.schema_version == version
    finally:
        again.close()
