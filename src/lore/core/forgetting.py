"""Forgetting a memory, the one way every surface does it (the tool, /forget, the CLI,
REST, MCP, the web page): the store erases it, then each feature's `memory_forgotten`
hook removes what still restates it (search: the turns and note chunks that said it).

The texts are read before the store erases them; the hooks get them and keep none."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from lore.core.feature import Forgotten
from lore.errors import NotFoundError

if TYPE_CHECKING:
    from lore.core.feature import Assembled

__all__ = ["KEPT_IN_TRANSCRIPT", "forget_memory"]

KEPT_IN_TRANSCRIPT = (
    "What you said stays in the conversation's transcript; `forget everywhere` erases that too."
)
_MIN_CHARS = 3  # a shorter text would match ordinary words


def forget_memory(
    lore: Assembled,
    scope: str,
    memory_id: int,
    *,
    by: str,
    via: str,
    now: datetime,
    turn: tuple[str, int] | None = None,
) -> list[int]:
    """Erase a memory and every earlier version of it (see MemoryStore.forget), then let
    each feature drop what restates it; `turn` is the turn that asked, when one did (a
    request to forget names what it forgets). Returns the erased ids."""
    forgotten = _what_carries(lore, scope, memory_id, turn)
    erased = lore.memory.forget(scope, memory_id, by=by, via=via, now=now)
    for feature in lore.features:
        for hook in feature.memory_forgotten:
            hook(forgotten)
    return erased


def _what_carries(
    lore: Assembled, scope: str, memory_id: int, turn: tuple[str, int] | None
) -> Forgotten:
    memory = lore.memory.get(scope, memory_id)
    versions = {memory.id: memory}
    for entry in lore.memory.history(scope, memory_id):
        if entry.memory_id not in versions:
            try:
                versions[entry.memory_id] = lore.memory.get(scope, entry.memory_id)
            except NotFoundError:
                continue
    texts: list[str] = []
    turns: list[tuple[str, int]] = [] if turn is None else [turn]
    for version in versions.values():
        texts.append(version.content)
        source = version.source
        if source is None or source.message_index is None:
            continue
        turns.append((source.session_id, source.message_index))
        said = _message_text(lore, scope, source.session_id, source.message_index)
        if said:
            texts.append(said)
    kept = tuple(dict.fromkeys(t for t in texts if len(t.strip()) >= _MIN_CHARS))
    return Forgotten(scope, kept, tuple(dict.fromkeys(turns)))


def _message_text(lore: Assembled, scope: str, session_id: str, index: int) -> str | None:
    from lore.errors import SessionError

    live = lore.session(scope)
    if live.meta.session_id == session_id:
        messages = live.messages
    else:
        entry = lore.sessions.archive.get(session_id)
        if entry is None:
            return None
        try:
            messages, _ = lore.sessions.archive.read_messages(entry, offset=index, limit=1)
        except SessionError:
            return None
        index = 0
    if not 0 <= index < len(messages):
        return None
    content = messages[index].get("content")
    return content if isinstance(content, str) else None
