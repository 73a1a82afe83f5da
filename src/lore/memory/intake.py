"""What a program adds to memory from outside a conversation (the Python API, REST):
what was said goes through the after-turn extraction with the configured model, or,
when no model can extract, is kept as one plain memory through the store's own write
(its secret detector and size rule). Also: which memory a phrase names, for forgetting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lore.errors import InvalidInputError, NotFoundError, quoted
from lore.text import normalise

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from lore.core.feature import Assembled
    from lore.llm.base import Provider
    from lore.ports.memories import MemoryStore

__all__ = ["Intake", "Said", "add_said", "exchange", "forget_named", "memory_named"]

# A plain text, or chat messages ({"role": "user" | "assistant", "content": "..."}).
Said = str | Sequence[Mapping[str, Any]]

_ROLES = ("user", "assistant", "system")
_NAMED = 5  # memories a refused phrase names


@dataclass(frozen=True)
class Intake:
    """What one add did: the notices a turn would show ("noted #12 …"), the memories it
    wrote (new ones and new versions), and whether a model extracted them."""

    notices: tuple[str, ...]
    memory_ids: tuple[int, ...]
    extracted: bool

    def record(self, store: MemoryStore, scope: str) -> dict[str, Any]:
        """The JSON form (the REST answer): the written memories as records."""
        memories = [store.get(scope, memory_id).to_record() for memory_id in self.memory_ids]
        return {"memories": memories, "notices": list(self.notices), "extracted": self.extracted}


def exchange(said: Said) -> tuple[str, str]:
    """The user's side and the assistant's side of what was said; InvalidInputError for
    nothing to add or a message that is not `{"role", "content"}` text."""
    if isinstance(said, str):
        if not said.strip():
            raise InvalidInputError("there is nothing to add: the text is empty")
        return said.strip(), ""
    if not isinstance(said, Sequence):
        raise InvalidInputError("add takes a text or a list of messages")
    sides: dict[str, list[str]] = {"user": [], "assistant": []}
    for number, message in enumerate(said, 1):
        if not isinstance(message, Mapping):
            raise InvalidInputError(f"message {number} is not a {{role, content}} object")
        role, content = message.get("role"), message.get("content")
        if role not in _ROLES:
            raise InvalidInputError(
                f"message {number}: role must be user, assistant or system, not {role!r}"
            )
        if not isinstance(content, str):
            raise InvalidInputError(f"message {number}: content must be text")
        if role != "system" and content.strip():
            sides[str(role)].append(content.strip())
    if not sides["user"]:
        raise InvalidInputError("there is nothing to add: no user message has text")
    return "\n\n".join(sides["user"]), "\n\n".join(sides["assistant"])


async def add_said(lore: Assembled, scope: str, said: Said, *, author: str, via: str) -> Intake:
    """Extract memories from what was said, through the after-turn extraction (its prompt,
    validation, supersession and forgetting), or keep the user's text as one memory
    when no model can extract (none configured, or extraction turned off). A model that
    fails twice, or answers what cannot be applied, raises its error: nothing was noted."""
    import asyncio

    from lore.core.feature import CompletedTurn
    from lore.core.forgetting import forget_memory
    from lore.memory.extraction import extract, extraction_provider

    user_text, reply_text = exchange(said)
    provider = _extractor(lore, extraction_provider)
    now = lore.clock.now()
    if provider is None:
        memory, created = await asyncio.to_thread(
            lore.memory.remember, scope, user_text, author=author, via=via, now=now
        )
        notice = f"noted #{memory.id}" if created else f"already noted as #{memory.id}"
        return Intake((notice,), (memory.id,) if created else (), extracted=False)

    def forget(memory_id: int) -> object:
        return forget_memory(lore, scope, memory_id, by=author, via=via, now=lore.clock.now())

    before = await asyncio.to_thread(_active_ids, lore.memory, scope, now)
    # Outside a conversation there is no session: the turn has no source message.
    turn = CompletedTurn(scope, author, via, "", -1, user_text, reply_text, [])
    notices = await extract(lore, provider, turn, forget=forget, strict=True)
    after = await asyncio.to_thread(_active_ids, lore.memory, scope, lore.clock.now())
    return Intake(tuple(notices), tuple(sorted(after - before)), extracted=True)


def memory_named(store: MemoryStore, scope: str, phrase: str, *, now: datetime) -> int:
    """The one active memory of `scope` whose text holds `phrase` (any case, any script);
    NotFoundError for none, InvalidInputError naming them when several do."""
    wanted = normalise(phrase.strip())
    if not wanted:
        raise InvalidInputError("a phrase to forget cannot be empty")
    found = [m for m in store.active(scope, now=now) if wanted in normalise(m.content)]
    if not found:
        raise NotFoundError(f"no memory in {scope} holds {quoted(phrase)}")
    if len(found) > 1:
        named = ", ".join(f"#{m.id} {quoted(m.content, 30)}" for m in found[:_NAMED])
        more = f" and {len(found) - _NAMED} more" if len(found) > _NAMED else ""
        raise InvalidInputError(
            f"{quoted(phrase)} matches {len(found)} memories ({named}{more}); give an id"
        )
    return found[0].id


def forget_named(
    lore: Assembled,
    scope: str,
    memory_id: int | None = None,
    *,
    phrase: str | None = None,
    everywhere: bool = False,
    by: str,
    via: str,
) -> dict[str, Any]:
    """Forget a memory given by its id or by a phrase it holds, as every surface forgets
    (`forget_memory`); with `everywhere`, also every copy under the home, as `lore forget
    --everywhere` erases them (the caller decides who may: that reaches every scope)."""
    from lore.core.forgetting import forget_memory
    from lore.memory.purge import purge_everywhere

    if (memory_id is None) == (phrase is None):
        raise InvalidInputError("forget takes a memory id or a phrase (one of them)")
    now = lore.clock.now()
    if memory_id is None:
        assert phrase is not None
        memory_id = memory_named(lore.memory, scope, phrase, now=now)
    if not everywhere:
        erased = forget_memory(lore, scope, memory_id, by=by, via=via, now=now)
        return {"id": memory_id, "erased": erased, "everywhere": []}
    versions = {memory_id, *(e.memory_id for e in lore.memory.history(scope, memory_id))}
    report = purge_everywhere(lore, scope, memory_id=memory_id, erase=True, by=by, via=via)
    return {"id": memory_id, "erased": sorted(versions), "everywhere": report.lines("")}


def _extractor(lore: Assembled, chosen: Callable[[Assembled], Provider | None]) -> Provider | None:
    """The model that extracts, or None: extraction off, or only the offline model, which
    cannot (extraction's own rule), so it is not even loaded for this."""
    config = lore.config
    if not config.extraction.enabled:
        return None
    if not config.extraction.model and config.model_spec().provider == "local":
        return None
    return chosen(lore)


def _active_ids(store: MemoryStore, scope: str, now: datetime) -> set[int]:
    return {m.id for m in store.active(scope, now=now)}
