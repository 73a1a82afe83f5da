"""Scheduled tasks on PostgreSQL: the dialect under `lore.backends.task_flow`.

Claims and leases select `FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint
rows without waiting for each other; a row another worker has just claimed no longer
matches what the claim looks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.backends.postgres.outbox import PostgresOutbox
from lore.backends.task_flow import TaskFlow

__all__ = ["PostgresTaskStore"]


class PostgresTaskStore(TaskFlow):
    _skip_locked = " FOR UPDATE SKIP LOCKED"
    _for_update = " FOR UPDATE"

    def __init__(self, db: PostgresDatabase, outbox: PostgresOutbox | None = None) -> None:
        super().__init__(outbox or PostgresOutbox(db))
        self.db = db

    def _writing(self) -> AbstractContextManager[Connection]:
        return self.db.atomic()

    def _reading(self) -> AbstractContextManager[Connection]:
        return self.db.connection()

    def _run(self, conn: Any, sql: str, args: Sequence[object] = ()) -> Any:
        return conn.execute(sql.replace("?", "%s"), tuple(args))

    def _at(self, moment: datetime) -> object:
        return moment

    def _lease_at(self, moment: datetime) -> object:
        return moment

    def _moment(self, stored: Any) -> datetime:
        assert isinstance(stored, datetime)
        return stored
