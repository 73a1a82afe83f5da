"""Scheduled tasks in `lore.db`: the SQLite dialect under `lore.backends.task_flow`.

A claim or a lease runs in one BEGIN IMMEDIATE transaction, so a second worker on the
same database waits for the write lock and then finds nothing left to take. Times are
seconds since the epoch (whole for due times, to the fraction for leases).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from lore.backends.local.database import Database
from lore.backends.local.outbox import LocalOutbox
from lore.backends.task_flow import TaskFlow

__all__ = ["SQLiteTaskStore"]


class SQLiteTaskStore(TaskFlow):
    def __init__(self, db: Database, outbox: LocalOutbox | None = None) -> None:
        super().__init__(outbox or LocalOutbox(db))
        self.db = db

    def _writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic()

    def _claiming(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.atomic(immediate=True)

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self.db.conn)

    def _run(self, conn: Any, sql: str, args: Sequence[object] = ()) -> Any:
        return conn.execute(sql, tuple(args))

    def _at(self, moment: datetime) -> object:
        return int(moment.timestamp())

    def _lease_at(self, moment: datetime) -> object:
        return moment.timestamp()

    def _moment(self, stored: Any) -> datetime:
        return datetime.fromtimestamp(float(stored), UTC)
