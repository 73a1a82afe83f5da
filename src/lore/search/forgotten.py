"""After a memory is forgotten, no search restates it: the turns that said it (the one it
came from, the one that asked to forget it, any that quote it) and the note chunks that
quote it leave the index, their neighbours are indexed again without them, and marks
(never text) keep them out of every later indexing and rebuild.

The transcript keeps what was said; `forget everywhere` erases that too."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

from lore.errors import SessionError

if TYPE_CHECKING:
    from lore.core.feature import Forgotten
    from lore.messages import Message
    from lore.search import SearchServices

__all__ = ["hide_forgotten"]


def hide_forgotten(lore: SearchServices, forgotten: Forgotten) -> None:
    """Leave what restates `forgotten` out of the index, for good."""
    from lore.search import sources

    with sources.INDEXING:
        _hide(lore, forgotten)


def _hide(lore: SearchServices, forgotten: Forgotten) -> None:
    from lore.search import searcher, sources

    found = searcher(lore)
    index = found.index
    scopes = set(found.scopes_for(forgotten.scope))
    turns: dict[str, set[int]] = defaultdict(set)
    for session_id, position in forgotten.turns:
        turns[session_id].add(position)
    notes: set[str] = set()
    marks: set[str] = set()
    if forgotten.texts:
        quoted = re.compile("|".join(re.escape(t) for t in forgotten.texts), re.IGNORECASE)
        ids = index.entries_matching(lambda text: quoted.search(text) is not None)
        for stored in index.fetch(ids).values():
            if stored.scope not in scopes or not quoted.search(stored.text):
                continue
            if stored.kind == "message":
                turns[stored.source].add(stored.locator)
            elif stored.kind == "note":
                notes.add(stored.source)
                marks.add(sources.chunk_mark(stored.text))
    live = lore.sessions.live(forgotten.scope)
    with index.batch():
        for session_id, positions in turns.items():
            messages = live.messages if live.meta.session_id == session_id else None
            if messages is None:
                messages = _archived(lore, session_id)
            index.hide(
                "message", session_id, {sources.turn_mark(_turn(messages, p)) for p in positions}
            )
        if marks:
            index.hide("note", "", marks)
    archive = lore.sessions.archive
    for session_id in turns:
        entry = archive.get(session_id)
        if entry is not None:
            sources.index_session(index, archive, entry, zone=lore.zone, force=True)
        elif live.meta.session_id == session_id:
            index.remove_source("message", session_id)
            sources.index_live(index, live, zone=lore.zone)
    workspace = lore.config.workspace
    for name in sorted(notes):
        sources.index_note_file(index, workspace, workspace / name, lore.notes, force=True)


def _turn(messages: list[Message] | None, position: int) -> int:
    """The user message that starts the turn holding `position` (a turn still being
    answered is not in the session yet: its user message comes at `position`)."""
    if messages is None or position >= len(messages):
        return position
    for start in range(position, -1, -1):
        if messages[start]["role"] == "user":
            return start
    return position


def _archived(lore: SearchServices, session_id: str) -> list[Message] | None:
    archive = lore.sessions.archive
    entry = archive.get(session_id)
    if entry is None:
        return None
    try:
        return archive.read_messages(entry)[0]
    except SessionError:
        return None
