"""LISTEN/NOTIFY: a reminder added by any worker wakes every worker's scheduler at once.

`notify(conn)` is sent inside the transaction that adds the reminder (PostgreSQL delivers
it when that commits). A `Listener` holds a connection of its own in a thread and calls
`answer` for each notification; when the connection breaks it connects again, and calls
`answer` once it is back, for whatever was added while it could not hear. A store's
notifications carry its tag, and its own listener skips them: the store has told its
listeners already, when the add committed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

from lore.backends.postgres.database import Connection

__all__ = ["CHANNEL", "Listener", "notify"]

log = logging.getLogger(__name__)

CHANNEL = "lore_reminders"
_RETRY_SECONDS = 2.0


def notify(conn: Connection, tag: str = "") -> None:
    conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, tag))


class Listener:
    def __init__(self, url: str, answer: Callable[[], None], *, skip: str = "") -> None:
        """`skip`: the tag of notifications not to answer (the listening store's own)."""
        self._url = url
        self._answer = answer
        self._skip = skip
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reminders-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        missed = False
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    if missed:
                        self._call()  # what was added while we could not hear
                    while not self._stop.is_set():
                        for heard in conn.notifies(timeout=1.0):
                            if not self._skip or heard.payload != self._skip:
                                self._call()
            except psycopg.Error as exc:
                log.info("not hearing about new reminders (%s); trying again", exc)
                missed = True
                self._stop.wait(_RETRY_SECONDS)

    def _call(self) -> None:
        try:
            self._answer()
        except Exception:
            log.exception("a reminder listener failed")

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
