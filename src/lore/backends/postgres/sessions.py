"""The sessions store on PostgreSQL: live sessions (live.py), the exact archive and its
index (`archived_sessions`, `archived_messages`), presence, close and recover.

A close runs archive → index → reset while holding the conversation's lock, exactly as
the local store does; each step is its own transaction, so a worker killed between two
steps leaves every message in the live session or a committed archive, and `recover`
(run by any worker) finishes what it left. Any worker can serve any conversation.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Any

from psycopg.types.json import Jsonb

from lore.backends.postgres.database import PostgresDatabase
from lore.backends.postgres.live import PostgresLiveSession
from lore.backends.postgres.locks import LockHub
from lore.errors import SessionError
from lore.llm.base import Message
from lore.ports.sessions import (
    ArchivedSession,
    FaultHook,
    LiveSession,
    SessionMeta,
    close_in_steps,
    finish_close,
)

__all__ = ["PostgresArchive", "PostgresSessions"]

_KEPT = 256  # live sessions kept loaded


class PostgresArchive:
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    @property
    def index_location(self) -> str:
        return "the archived_sessions table"

    def entries(self) -> list[ArchivedSession]:
        rows = self.db.fetch_all(
            "SELECT entry FROM archived_sessions WHERE closed IS NOT NULL ORDER BY closed"
        )
        return [ArchivedSession.from_dict(row["entry"]) for row in rows]

    def get(self, session_id: str) -> ArchivedSession | None:
        row = self.db.fetch_one(
            "SELECT entry FROM archived_sessions WHERE session_id = %s AND closed IS NOT NULL",
            (session_id,),
        )
        return None if row is None else ArchivedSession.from_dict(row["entry"])

    def read_messages(
        self, entry: ArchivedSession, *, offset: int = 0, limit: int | None = None
    ) -> tuple[list[Message], int]:
        row = self.db.fetch_one(
            "SELECT message_count FROM archived_sessions WHERE session_id = %s",
            (entry.session_id,),
        )
        if row is None:
            raise SessionError(f"archived transcript {entry.transcript_path} is missing")
        rows = self.db.fetch_all(
            "SELECT body FROM archived_messages WHERE session_id = %s AND seq > %s"
            " ORDER BY seq LIMIT %s",
            (entry.session_id, offset, limit),
        )
        return [json.loads(r["body"]) for r in rows], int(row["message_count"])

    def link_summary(
        self, session_id: str, memory_path: str | None, slug: str, status: str
    ) -> None:
        link = {"memory_path": memory_path, "slug": slug, "summary": status}
        with self.db.atomic() as conn:
            found = conn.execute(
                "UPDATE archived_sessions SET entry = entry || %s, written = written || %s,"
                " version = nextval('archive_changes')"
                " WHERE session_id = %s AND closed IS NOT NULL RETURNING session_id",
                (Jsonb(link), Jsonb(link), session_id),
            ).fetchone()
        if found is None:
            raise SessionError(f"no archived session {session_id}")

    def fingerprint(self, entry: ArchivedSession) -> tuple[int, int] | None:
        row = self.db.fetch_one(
            "SELECT version, message_count FROM archived_sessions WHERE session_id = %s",
            (entry.session_id,),
        )
        return None if row is None else (int(row["version"]), int(row["message_count"]))

    def stamp(self) -> tuple[int, int] | None:
        row = self.db.fetch_one("SELECT last_value, is_called FROM archive_changes")
        if row is None or not row["is_called"]:
            return None
        return int(row["last_value"]), 0

    # -- what a close writes -----------------------------------------------------------

    def write_transcript(
        self,
        meta: SessionMeta,
        messages: Sequence[Message],
        *,
        ended_at: datetime,
        zone: tzinfo,
        slug: str,
        reason: str,
        fault: FaultHook | None,
    ) -> ArchivedSession:
        """Store the exact transcript (one transaction: whole or absent), not indexed
        yet; a session closed again keeps its first transcript path."""
        earlier = self.db.fetch_one(
            "SELECT transcript_path FROM archived_sessions WHERE session_id = %s",
            (meta.session_id,),
        )
        if earlier is not None:
            path = str(earlier["transcript_path"])
        else:
            stamp = ended_at.astimezone(zone).strftime("%Y-%m-%d-%H%M")
            path = f"sessions/archive/{stamp}-{slug}--{meta.session_id[:8]}.jsonl"
        entry = ArchivedSession(
            session_id=meta.session_id,
            key=meta.key,
            slug=slug,
            created_at=meta.created_at,
            updated_at=meta.updated_at,
            ended_at=ended_at.isoformat(timespec="seconds"),
            message_count=len(messages),
            transcript_path=path,
            reason=reason,
        )
        _step(fault, "archive_tmp_written")  # nothing is visible before the commit
        metadata = {"last_consolidated": meta.last_consolidated, "extra": meta.extra}
        self.store(entry, metadata, [json.dumps(m, ensure_ascii=False) for m in messages])
        return entry

    def store(self, entry: ArchivedSession, metadata: dict[str, Any], bodies: list[str]) -> None:
        """Write one transcript (its messages as JSON text), replacing an earlier one."""
        with self.db.atomic() as conn:
            conn.execute(
                "INSERT INTO archived_sessions (session_id, key, transcript_path, written,"
                " metadata, message_count, version)"
                " VALUES (%s, %s, %s, %s, %s, %s, nextval('archive_changes'))"
                " ON CONFLICT (session_id) DO UPDATE SET written = excluded.written,"
                " metadata = excluded.metadata, message_count = excluded.message_count,"
                " version = excluded.version",
                (
                    entry.session_id,
                    entry.key,
                    entry.transcript_path,
                    Jsonb(entry.to_dict()),
                    Jsonb(metadata),
                    len(bodies),
                ),
            )
            conn.execute("DELETE FROM archived_messages WHERE session_id = %s", (entry.session_id,))
            with (
                conn.cursor() as cur,
                cur.copy("COPY archived_messages (session_id, seq, body) FROM STDIN") as copy,
            ):
                for seq, body in enumerate(bodies, 1):
                    copy.write_row((entry.session_id, seq, body))

    def restore(
        self, entry: ArchivedSession, metadata: dict[str, Any], messages: Sequence[Message]
    ) -> None:
        """Store a transcript copied from another store, indexed as it was there
        (`lore migrate`: paths and summary links stay as they were)."""
        self.store(entry, metadata, [json.dumps(m, ensure_ascii=False) for m in messages])
        self.append_index(entry, keep_link=False)

    def metadata(self, entry: ArchivedSession) -> dict[str, Any]:
        """The live session's metadata (last_consolidated, extra) kept with a transcript."""
        row = self.db.fetch_one(
            "SELECT metadata FROM archived_sessions WHERE session_id = %s", (entry.session_id,)
        )
        return {} if row is None else dict(row["metadata"])

    def append_index(self, entry: ArchivedSession, *, keep_link: bool = True) -> None:
        """Index (or index again, last in close order) a stored transcript; a summary
        linked before is kept when the entry names none."""
        with self.db.atomic() as conn:
            row = conn.execute(
                "SELECT entry FROM archived_sessions WHERE session_id = %s FOR UPDATE",
                (entry.session_id,),
            ).fetchone()
            if row is None:
                raise SessionError(f"no archived transcript for session {entry.session_id}")
            earlier = row["entry"]
            if keep_link and earlier and earlier.get("memory_path") and not entry.memory_path:
                entry = replace(entry, memory_path=earlier["memory_path"])
            conn.execute(
                "UPDATE archived_sessions SET entry = %s, closed = nextval('archive_changes')"
                " WHERE session_id = %s",
                (Jsonb(entry.to_dict()), entry.session_id),
            )

    def unindexed_moved_on(self) -> list[ArchivedSession]:
        """Transcripts stored but never indexed whose conversation has moved on."""
        rows = self.db.fetch_all(
            "SELECT a.written FROM archived_sessions a LEFT JOIN live_sessions l"
            " ON l.key = a.key WHERE a.closed IS NULL"
            " AND (l.session_id IS NULL OR l.session_id <> a.session_id) ORDER BY a.version"
        )
        return [ArchivedSession.from_dict(row["written"]) for row in rows]

    def pending_moved_on(self) -> list[ArchivedSession]:
        """Indexed sessions whose summary is pending and whose conversation moved on."""
        rows = self.db.fetch_all(
            "SELECT a.entry FROM archived_sessions a LEFT JOIN live_sessions l"
            " ON l.key = a.key WHERE a.closed IS NOT NULL AND a.entry ->> 'summary' = 'pending'"
            " AND (l.session_id IS NULL OR l.session_id <> a.session_id) ORDER BY a.closed"
        )
        return [ArchivedSession.from_dict(row["entry"]) for row in rows]

    def written_live(self) -> list[tuple[str, ArchivedSession]]:
        """(key, transcript as last stored) of live sessions a stopped close archived,
        indexed or not."""
        rows = self.db.fetch_all(
            "SELECT l.key, a.written FROM live_sessions l JOIN archived_sessions a"
            " ON a.session_id = l.session_id ORDER BY l.key"
        )
        return [(str(row["key"]), ArchivedSession.from_dict(row["written"])) for row in rows]


class PostgresSessions:
    def __init__(self, db: PostgresDatabase, locks: LockHub) -> None:
        self.db = db
        self.locks = locks
        self.archive = PostgresArchive(db)
        self._live: OrderedDict[str, PostgresLiveSession] = OrderedDict()
        self._kept = threading.Lock()  # `live` is called from worker threads too

    def live(self, key: str) -> PostgresLiveSession:
        with self._kept:
            session = self._live.get(key)
        if session is None:
            session = PostgresLiveSession(self.db, self.locks, key)
        else:
            session.refresh()
        with self._kept:
            session = self._live.setdefault(key, session)  # one handle, if two were made
            self._live.move_to_end(key)
            while len(self._live) > _KEPT:
                self._live.popitem(last=False)
        return session

    def live_meta(self, key: str) -> SessionMeta | None:
        row = self.db.fetch_one("SELECT * FROM live_sessions WHERE key = %s", (key,))
        if row is None:
            return None
        return SessionMeta(
            session_id=str(row["session_id"]),
            key=key,
            created_at=str(row["created_at"]),
            updated_at=str(row["updated_at"]),
            last_consolidated=int(row["last_consolidated"]),
            extra=dict(row["extra"] or {}),
        )

    def live_keys(self) -> list[str]:
        return [str(row["key"]) for row in self.db.fetch_all("SELECT key FROM live_sessions")]

    def close(
        self,
        session: LiveSession,
        *,
        reason: str,
        ended_at: datetime,
        zone: tzinfo,
        slug: str,
        fault: FaultHook | None = None,
    ) -> ArchivedSession | None:
        return close_in_steps(
            self.archive,
            session,
            reason=reason,
            ended_at=ended_at,
            zone=zone,
            slug=slug,
            fault=fault,
        )

    def recover(self, *, min_age: float = 60.0) -> list[ArchivedSession]:
        """Finish what a stopped close left; the closed sessions still needing a summary.
        Nothing is half-written on PostgreSQL, so `min_age` has nothing to wait for."""
        for entry in self.archive.unindexed_moved_on():
            self.archive.append_index(entry)
        for key, written in self.archive.written_live():
            with self.locks.hold(f"turn:{key}", wait=False) as free:
                if free:  # else a turn is under way there: the next pass finishes it
                    finish_close(self.archive, self.live(key), written)
        return self.archive.pending_moved_on()

    def redact_messages(
        self, match: Callable[[str], bool], redact: Callable[[Any], Any], *, dry_run: bool = False
    ) -> int:
        """Every row holding a matching text: lines, drafts, live metadata, archived
        messages and entries (a transcript path named after the text included)."""
        changed = 0
        with self.db.atomic() as conn:
            for table, key, columns in _REDACTED:
                names = ", ".join(columns)
                rows = conn.execute(f"SELECT {key} AS row_key, {names} FROM {table}").fetchall()
                updates = []
                for row in rows:
                    values = [row[c] for c in columns]
                    if not any(match(_text(v)) for v in values):
                        continue
                    updates.append((*(_redacted(v, redact) for v in values), row["row_key"]))
                changed += len(updates)
                if updates and not dry_run:
                    sets = ", ".join(f"{c} = %s" for c in columns)
                    with conn.cursor() as cursor:
                        cursor.executemany(f"UPDATE {table} SET {sets} WHERE {key} = %s", updates)
        return changed

    @contextmanager
    def attach(self, key: str) -> Iterator[bool]:
        with self.locks.hold(f"attach:{key}", wait=False) as free:
            yield free

    def attached(self, key: str) -> bool:
        return self.locks.held_anywhere(f"attach:{key}")

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        # An advisory lock per conversation: every worker on this database waits for it,
        # and a worker killed mid-turn drops it with its connection.
        async with self.locks.hold_async(f"turn:{key}"):
            yield


# (table, a unique key, the columns that may hold a copy of what the person said)
_REDACTED = (
    ("session_lines", "(key, session_id, seq)::text", ("body",)),
    ("session_drafts", "key", ("text",)),
    ("live_sessions", "key", ("extra",)),
    ("archived_messages", "(session_id, seq)::text", ("body",)),
    ("archived_sessions", "session_id", ("transcript_path", "written", "entry", "metadata")),
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _redacted(value: Any, redact: Callable[[Any], Any]) -> Any:
    """A text column's JSON (or plain text) or a jsonb value, redacted in its own form."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return redact(value)
        if isinstance(parsed, dict | list):
            return json.dumps(redact(parsed), ensure_ascii=False)
        return redact(value)
    return Jsonb(redact(value))


def _step(fault: FaultHook | None, name: str) -> None:
    if fault is not None:
        fault(name)
