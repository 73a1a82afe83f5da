"""A live session on PostgreSQL: one `live_sessions` row per conversation key, and its
`session_lines` (messages and marks) numbered within the session, never rewritten.

Every append is one transaction that locks the key's row first, so writers on any worker
take turns and line numbers follow commit order: a reader asking for lines after the
last it saw never misses one. `locked()` holds the conversation's advisory lock across
several steps (a close). A reply being streamed goes to `session_drafts` as it is shown,
from a thread, a few times a second; a worker killed mid-reply leaves it, and the next
handle opened on the conversation keeps it as an `interrupted` reply.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from lore.backends.postgres.database import Connection, PostgresDatabase
from lore.backends.postgres.locks import LockHub
from lore.errors import SessionError, StoreError
from lore.llm.base import Message
from lore.messages import merge_flags, parse_message
from lore.ports.sessions import SessionMeta

__all__ = ["DRAFT_EVERY", "PostgresDraft", "PostgresLiveSession", "drafts_written"]

log = logging.getLogger(__name__)

# Seconds between two writes of a streamed reply's draft: a reply streams 20-100 chunks a
# second, and a transaction for each would keep the worker busy with them.
DRAFT_EVERY = 0.25
_CLAIM_WAIT = 5.0  # seconds a draft's writer waits for the previous reply's to let go

_META_FIELDS = ("session_id", "created_at", "updated_at", "last_consolidated", "extra")

# The session's metadata with its lines after a number (one row when there are none).
_SINCE = (
    "SELECT l.session_id, l.created_at, l.updated_at, l.last_consolidated, l.extra,"
    " s.seq, s.is_mark, s.body FROM live_sessions l LEFT JOIN session_lines s"
    " ON s.key = l.key AND s.session_id = l.session_id AND s.seq > %s"
    " WHERE l.key = %s ORDER BY s.seq"
)


class PostgresDraft:
    """The reply being streamed, one row per conversation, written by a thread of its own
    so that showing a chunk never waits on the database: the first chunk at once, then
    what was shown since at most every `DRAFT_EVERY` seconds (a pause in the stream, a
    tool running, is caught up on by the next tick). A killed worker loses at most that
    last fraction of a second of what was shown; its commits are asynchronous, so only
    the server's own crash can lose a little more. The row is made, and claimed, with
    the first chunk; once the turn closes it, the writer drops the row."""

    def __init__(
        self,
        session: PostgresLiveSession,
        index: int,
        why: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self._session = session
        self._index = index
        self._why = why
        self._parts: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closing = False
        self._started = False  # the writer was handed the draft
        self._first: tuple[str, dict[str, Any] | None] = ("", None)  # session id, why

    def write(self, text: str) -> None:
        with self._lock:
            self._parts.append(text)
            if not self._started:
                # Taken as the first text is shown, on the caller's thread, as it was then.
                why = self._why() if self._why is not None else None
                self._first = (self._session.meta.session_id, why or None)
                self._started = True
                _WRITERS.run(self._write_out)
            self._changed.notify()

    def close(self) -> None:
        """The reply is stored (or the turn failed): the writer drops the row and lets go
        of the claim on its own, and the next draft of this conversation waits for that;
        the event loop does not."""
        with self._lock:
            if not self._started:
                return  # nothing was shown: nothing to drop
            self._closing = True
            self._changed.notify()

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(self._parts)

    def _write_out(self) -> None:
        """The writer thread: claim the draft, keep the row up with the stream until the
        turn closes it (its reply stored by then), then drop the row. It never waits for
        a server that went away: while the database cannot be reached it skips its turns
        (and leaves the row, which the next handle opened keeps)."""
        session = self._session
        # The claim may still be with this conversation's previous reply, whose writer
        # is dropping its row: wait for it, a while.
        deadline = time.monotonic() + _CLAIM_WAIT
        try:
            while True:
                with session.hold_draft() as free:
                    if free:
                        self._keep_up(session)
                        return
                if time.monotonic() > deadline:
                    return  # another turn streams in this conversation
                time.sleep(0.005)
        except StoreError as exc:
            log.warning("%s: the reply's draft was not kept: %s", session.key, exc)

    def _keep_up(self, session: PostgresLiveSession) -> None:
        written = 0  # parts in the row
        started = False
        failed = False
        try:
            while True:
                with self._lock:
                    while not self._closing and len(self._parts) == written:
                        self._changed.wait()
                    if self._closing:
                        return
                    upto = len(self._parts)
                    text = "".join(self._parts[written:upto])
                try:
                    if not session.reachable:
                        pass  # the next tick tries again
                    elif started:
                        session.extend_draft(text)
                        written = upto
                    else:
                        session_id, why = self._first
                        session.start_draft(self._index, text, why, session_id=session_id)
                        started = True
                        written = upto
                except StoreError as exc:  # the stream goes on; the next tick retries
                    if not failed:
                        log.warning("%s: the reply's draft was not kept: %s", session.key, exc)
                    failed = True
                with self._lock:
                    self._changed.wait_for(lambda: self._closing, timeout=DRAFT_EVERY)
        finally:
            if started and session.reachable:
                try:
                    session.drop_draft()
                except StoreError as exc:  # the next handle opened keeps it
                    log.warning("%s: the reply's draft was left: %s", session.key, exc)


class _Writers:
    """The threads drafts are written from, each kept for the next draft when its own
    ends: starting a thread makes the caller (the event loop) wait until it runs, which
    on a busy worker is milliseconds a reply."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._idle = 0
        self._busy = 0

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            grow = not self._idle
            if not grow:
                self._idle -= 1
            self._busy += 1
        self._jobs.put(job)
        if grow:
            threading.Thread(target=self._work, name="lore-draft-writer", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:  # a bug in one draft must not take the thread from the rest
                log.exception("a reply's draft writer failed")
            with self._lock:
                self._idle += 1
                self._busy -= 1
                self._done.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until every draft handed over is written out (rows dropped); False when
        `timeout` seconds passed first."""
        with self._lock:
            return self._done.wait_for(lambda: not self._busy, timeout)


_WRITERS = _Writers()


def drafts_written(timeout: float = 5.0) -> bool:
    """Wait for this process's draft writers to finish (before its database closes)."""
    return _WRITERS.wait(timeout)


class PostgresLiveSession:
    """One conversation's live transcript; `refresh()` reads only lines added since."""

    def __init__(self, db: PostgresDatabase, locks: LockHub, key: str) -> None:
        self.key = key
        self.messages: list[Message] = []
        self.meta: SessionMeta
        self._db = db
        self._locks = locks
        self._seq = 0
        self._lock_depth = 0
        # A turn appends from a worker thread while the loop may refresh this same handle:
        # one at a time, or a line read by both would be added twice.
        self._guard = threading.RLock()
        with self._locked():
            self._load_all()
            self._recover_draft()

    # -- reading ---------------------------------------------------------------------

    def refresh(self) -> None:
        """The metadata and the lines added since the last read, in one query."""
        with self._guard:
            with self._db.connection() as conn:
                rows = conn.execute(_SINCE, (self._seq, self.key)).fetchall()
            if not rows or rows[0]["session_id"] != self.meta.session_id:
                self._load_all()
                return
            self.meta = _meta(rows[0], self.key)
            self._apply(rows)

    def _load_all(self) -> None:
        with self._db.connection() as conn:
            rows = conn.execute(_SINCE, (0, self.key)).fetchall()
        if not rows:
            with self._db.atomic() as conn:
                _create(conn, self.key, None, on_conflict="DO NOTHING")
                rows = conn.execute(_SINCE, (0, self.key)).fetchall()
        self.meta = _meta(rows[0], self.key)
        self.messages = []
        self._seq = 0
        self._apply(rows)

    def _apply(self, rows: list[Any]) -> None:
        """Add lines (rows with `seq`, `is_mark`, `body`; a row without a line is skipped),
        each once: a refresh from another thread (the after-turn indexing) may read the
        lines a write has just committed before that write adds them here."""
        with self._guard:
            self._apply_new(rows)

    def _apply_new(self, rows: list[Any]) -> None:
        for row in rows:
            if row["seq"] is None or int(row["seq"]) <= self._seq:
                continue
            line = json.loads(row["body"])
            if row["is_mark"]:
                index, flags = line.get("index"), line.get("flags")
                if isinstance(index, int) and 0 <= index < len(self.messages):
                    try:
                        merge_flags(self.messages[index], flags)
                    except SessionError as exc:
                        log.warning("%s: skipped a mark on message %d: %s", self.key, index, exc)
            else:
                try:
                    self.messages.append(parse_message(line))
                except SessionError as exc:
                    log.warning("%s line %s: skipped: %s", self.key, row["seq"], exc)
            self._seq = int(row["seq"])

    # -- writing ---------------------------------------------------------------------

    def append(self, messages: list[Message], *, touch: bool = True, durable: bool = True) -> None:
        self._write([(False, m) for m in messages], touch=touch, durable=durable)

    def append_once(self, key: str, messages: list[Message]) -> bool:
        lines = [(False, {**m, "delivery": key}) for m in messages]
        return self._write(lines, touch=True, durable=True, unless_delivered=key)

    def mark(self, index: int, **flags: Any) -> None:
        self._write([(True, {"index": index, "flags": flags})], touch=False, durable=True)

    def _write(
        self,
        lines: Sequence[tuple[bool, Mapping[str, object]]],
        *,
        touch: bool,
        durable: bool,
        unless_delivered: str | None = None,
    ) -> bool:
        """One transaction: lock the key's row (touching it), catch up on what others
        wrote, then add the lines after the last one. The handle is current afterwards
        without reading again."""
        if not lines:
            return True
        bodies = [(mark, json.dumps(line, ensure_ascii=False)) for mark, line in lines]
        with self._guard:
            with self._db.atomic() as conn:
                if not durable:
                    conn.execute("SET LOCAL synchronous_commit = off")
                # Touched as it is locked, unless a delivery check may yet leave it untouched.
                early = touch and unless_delivered is None
                row = _lock_row(conn, self.key, touch=_now() if early else None)
                if row["session_id"] != self.meta.session_id:
                    self.messages, self._seq = [], 0  # reset elsewhere: read the new session
                self.meta = _meta(row, self.key)
                others = conn.execute(
                    "SELECT seq, is_mark, body FROM session_lines"
                    " WHERE key = %s AND session_id = %s AND seq > %s ORDER BY seq",
                    (self.key, self.meta.session_id, self._seq),
                ).fetchall()
                self._apply(others)
                if unless_delivered is not None and any(
                    m.get("delivery") == unless_delivered for m in self.messages
                ):
                    return False
                if touch and not early:
                    self.meta.updated_at = _now()
                    conn.execute(
                        "UPDATE live_sessions SET updated_at = %s WHERE key = %s",
                        (self.meta.updated_at, self.key),
                    )
                added = [
                    {"seq": self._seq + n, "is_mark": mark, "body": body}
                    for n, (mark, body) in enumerate(bodies, 1)
                ]
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO session_lines (key, session_id, seq, is_mark, body)"
                        " VALUES (%s, %s, %s, %s, %s)",
                        [
                            (self.key, self.meta.session_id, a["seq"], a["is_mark"], a["body"])
                            for a in added
                        ],
                    )
            self._apply(added)  # only once committed
        return True

    def update_meta(self, **changes: Any) -> None:
        unknown = set(changes) - set(_META_FIELDS)
        if unknown:
            raise TypeError(f"not session metadata: {sorted(unknown)}")
        with self._guard:
            with self._db.atomic() as conn:
                current = _lock_row(conn, self.key)
                values = {name: current[name] for name in _META_FIELDS}
                for name, value in changes.items():
                    if name == "extra":
                        values["extra"] = {**values["extra"], **value}
                    else:
                        values[name] = value
                conn.execute(
                    "UPDATE live_sessions SET session_id = %s, created_at = %s, updated_at = %s,"
                    " last_consolidated = %s, extra = %s WHERE key = %s",
                    (
                        values["session_id"],
                        values["created_at"],
                        values["updated_at"],
                        int(values["last_consolidated"]),
                        Jsonb(values["extra"]),
                        self.key,
                    ),
                )
            self.refresh()

    def reset(self, session_id: str | None = None) -> None:
        """Start a fresh transcript under the same key; the old lines go (the archive
        holds them by now)."""
        fresh = session_id or uuid.uuid4().hex
        with self._guard:
            with self._db.atomic() as conn:
                _lock_row(conn, self.key)
                _create(conn, self.key, fresh, on_conflict="REPLACE")
                conn.execute(
                    "DELETE FROM session_lines WHERE key = %s AND session_id <> %s",
                    (self.key, fresh),
                )
            self._load_all()

    def locked(self) -> AbstractContextManager[None]:
        return self._locked()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        with self._locks.hold(f"session:{self.key}"):
            self._lock_depth = 1
            try:
                yield
            finally:
                self._lock_depth = 0

    # -- the reply being streamed ----------------------------------------------------

    @contextmanager
    def draft(
        self, index: int, why: Callable[[], dict[str, Any]] | None = None
    ) -> Iterator[PostgresDraft]:
        draft = PostgresDraft(self, index, why)
        try:
            yield draft
        finally:
            draft.close()

    @property
    def reachable(self) -> bool:
        """Can the database be reached (as far as its pool knows)?"""
        return self._db.reachable

    def hold_draft(self) -> AbstractContextManager[bool]:
        """The claim on this conversation's draft: False while another turn streams."""
        return self._locks.hold(f"draft:{self.key}", wait=False)

    def start_draft(
        self,
        index: int,
        text: str,
        why: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
    ) -> None:
        with self._db.atomic() as conn:
            conn.execute("SET LOCAL synchronous_commit = off")
            conn.execute(
                "INSERT INTO session_drafts (key, session_id, index, text, why)"
                " VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id,"
                " index = excluded.index, text = excluded.text, why = excluded.why",
                (
                    self.key,
                    session_id or self.meta.session_id,
                    index,
                    text,
                    None if why is None else Jsonb(why),
                ),
            )

    def extend_draft(self, text: str) -> None:
        with self._db.atomic() as conn:
            conn.execute("SET LOCAL synchronous_commit = off")
            conn.execute(
                "UPDATE session_drafts SET text = text || %s WHERE key = %s", (text, self.key)
            )

    def drop_draft(self) -> None:
        with self._db.atomic() as conn:
            conn.execute("DELETE FROM session_drafts WHERE key = %s", (self.key,))

    def _recover_draft(self) -> None:
        """A reply a killed worker was streaming: keep what the user saw of it.

        The claim comes first, then the row and the transcript are read: a turn holds its
        claim until its reply is stored and its row gone, so a row read before the claim
        may belong to a turn that has just ended, and would be kept a second time."""
        if not self._db.fetch_one("SELECT 1 FROM session_drafts WHERE key = %s", (self.key,)):
            return  # the usual case, without touching the lock
        with self.hold_draft() as free:
            if not free:
                return  # still being streamed by a live turn
            row = self._db.fetch_one("SELECT * FROM session_drafts WHERE key = %s", (self.key,))
            if row is None:
                return  # its turn ended as we came
            self.refresh()
            same = row["session_id"] == self.meta.session_id
            index = int(row["index"])
            text = str(row["text"])
            if same and index == len(self.messages) - 1 and text.strip():
                timestamp = self.messages[index].get("timestamp", _now())
                log.warning("%s: kept a reply interrupted by a crash", self.key)
                reply: Message = {"role": "assistant", "content": text, "timestamp": timestamp}
                reply["interrupted"] = True
                if isinstance(row.get("why"), dict) and row["why"]:
                    reply["why"] = row["why"]
                self.append([reply])
            self.drop_draft()


def _lock_row(conn: Connection, key: str, *, touch: str | None = None) -> Any:
    """Lock the key's row for this transaction (made when missing), setting `updated_at`
    to `touch` when given; the row."""
    for _ in range(2):
        if touch is None:
            cursor = conn.execute("SELECT * FROM live_sessions WHERE key = %s FOR UPDATE", (key,))
        else:
            cursor = conn.execute(
                "UPDATE live_sessions SET updated_at = %s WHERE key = %s RETURNING *", (touch, key)
            )
        row = cursor.fetchone()
        if row is not None:
            return row
        _create(conn, key, None, on_conflict="DO NOTHING")
    raise AssertionError("the session row was just made")


def _create(conn: Connection, key: str, session_id: str | None, *, on_conflict: str) -> Any:
    now = _now()
    action = (
        "DO NOTHING"
        if on_conflict == "DO NOTHING"
        else "DO UPDATE SET session_id = excluded.session_id, created_at = excluded.created_at,"
        " updated_at = excluded.updated_at, last_consolidated = 0, extra = '{}'"
    )
    conn.execute(
        "INSERT INTO live_sessions (key, session_id, created_at, updated_at) VALUES"
        f" (%s, %s, %s, %s) ON CONFLICT (key) {action}",
        (key, session_id or uuid.uuid4().hex, now, now),
    )
    return conn.execute("SELECT * FROM live_sessions WHERE key = %s", (key,)).fetchone()


def _meta(row: Any, key: str) -> SessionMeta:
    return SessionMeta(
        session_id=str(row["session_id"]),
        key=key,
        created_at=str(row["created_at"]),
        updated_at=str(row["updated_at"]),
        last_consolidated=int(row["last_consolidated"]),
        extra=dict(row["extra"] or {}),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
