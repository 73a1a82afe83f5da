"""Copy conversations between two homes' stores, either way (files ↔ PostgreSQL): every
live session (messages with their marks, metadata, session id), every archived session
(its exact transcript, path, summary link and close order) and the history log (cursors
and the Dream cursor). Both sides are read back through the ports and compared by count
and content hash, as `lore migrate` prints them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from lore.backends.postgres.copy import TableCopy
from lore.errors import StoreError
from lore.llm.base import Message
from lore.ports.notes import HistoryLog
from lore.ports.sessions import ArchivedSession, SessionArchive, SessionStore

__all__ = ["copy_history", "copy_sessions"]


class RestorableArchive(SessionArchive, Protocol):
    def restore(
        self, entry: ArchivedSession, metadata: dict[str, Any], messages: Sequence[Message]
    ) -> None: ...

    def metadata(self, entry: ArchivedSession) -> dict[str, Any]: ...


def copy_sessions(
    source: SessionStore,
    source_archive: RestorableArchive,
    target: SessionStore,
    target_archive: RestorableArchive,
) -> list[TableCopy]:
    """Copy every live and archived session into `target`, which must hold none."""
    if target.live_keys() or target_archive.entries():
        raise StoreError("the target already holds sessions; copy into an empty one")
    for entry in source_archive.entries():
        messages, _ = source_archive.read_messages(entry)
        target_archive.restore(entry, source_archive.metadata(entry), messages)
    for key in sorted(source.live_keys()):
        live = source.live(key)
        copy = target.live(key)
        copy.reset(live.meta.session_id)
        copy.append(live.messages, touch=False)
        copy.update_meta(
            created_at=live.meta.created_at,
            updated_at=live.meta.updated_at,
            last_consolidated=live.meta.last_consolidated,
            extra=live.meta.extra,
        )
    return [
        _compare("live sessions", _live_rows(source), _live_rows(target)),
        _compare("archive", _archive_rows(source_archive), _archive_rows(target_archive)),
    ]


def copy_history(source: HistoryLog, target: HistoryLog) -> TableCopy:
    """Copy the history log (same cursors, same times) and the Dream cursor."""
    if target.entries(limit=1):
        raise StoreError("the target already holds history entries; copy into an empty one")
    for entry in source.entries():
        copied = target.append(
            entry.session_key, entry.content, now=datetime.fromisoformat(entry.timestamp)
        )
        if copied.cursor != entry.cursor:
            raise StoreError(
                f"history cursor {entry.cursor} became {copied.cursor}: the source has a gap"
            )
    target.set_dream_cursor(source.dream_cursor())

    def rows(log: HistoryLog) -> list[Any]:
        return [vars(e) for e in log.entries()]

    def digest(log: HistoryLog) -> str:  # the Dream cursor counts in the hash, not as a row
        return _digest([*rows(log), {"dream_cursor": log.dream_cursor()}])

    copy = TableCopy(
        "history", len(rows(source)), len(rows(target)), digest(source), digest(target)
    )
    if not copy.same:
        raise StoreError("the copy does not read back the same in history")
    return copy


def _live_rows(sessions: SessionStore) -> list[Any]:
    rows = []
    for key in sorted(sessions.live_keys()):
        live = sessions.live(key)
        meta = vars(live.meta)
        rows.append({"meta": meta, "messages": live.messages})
    return rows


def _archive_rows(archive: RestorableArchive) -> list[Any]:
    rows = []
    for entry in archive.entries():
        messages, total = archive.read_messages(entry)
        rows.append(
            {
                "entry": entry.to_dict(),
                "metadata": archive.metadata(entry),
                "messages": messages,
                "total": total,
            }
        )
    return rows


def _compare(name: str, source: Sequence[Any], target: Sequence[Any]) -> TableCopy:
    copy = TableCopy(name, len(source), len(target), _digest(source), _digest(target))
    if not copy.same:
        raise StoreError(f"the copy does not read back the same in {name}")
    return copy


def _digest(rows: Iterable[Any]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]
