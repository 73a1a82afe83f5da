"""Each person's data in their own hands: in any conversation a person can see what Lore
holds about them (what they noted, and what names them) and forget what they noted there,
after their own yes. Only the conversation they speak in is ever read or changed.

The model's tools `my_memories` and `forget_my_memories` and the commands `/mine` and
`/forget-mine` take no name: the person is whoever is speaking, so nobody can ask for, or
erase, someone else's memories through them. The owner does the same for any author from
the command line (`lore memory forget --author`, `lore memory export --author`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lore.core.commands import Command
from lore.core.forgetting import KEPT_IN_TRANSCRIPT, forget_memory
from lore.errors import NotFoundError
from lore.ports.memories import clean_author

if TYPE_CHECKING:
    from lore.core.commands import CommandContext
    from lore.core.feature import Assembled
    from lore.core.tools import ToolContext
    from lore.ports.memories import Memory, MemoryStore

__all__ = [
    "ForgetMyMemoriesTool",
    "MyMemoriesTool",
    "about",
    "forget_noted_by",
    "kept_of",
    "memories",
    "names",
    "noted_by",
    "person_commands",
]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_CYRILLIC_VOWEL_END = re.compile(r"[аяоеёиыуюй]$", re.IGNORECASE)


def noted_by(memory: Memory, person: str) -> bool:
    return clean_author(memory.author).casefold() == clean_author(person).casefold()


def names(memory: Memory, person: str) -> bool:
    """Does the memory's text or a keyword name the person? A Chinese name inside a
    sentence ("小明喜欢猫"), a word elsewhere; a Russian name in any case ("Анны", "Анне")."""
    name = clean_author(person)
    if len(name) < 2:
        return False
    if _CJK.search(name):
        pattern = re.escape(name)
    else:
        stem = name
        ending = ""
        if re.search(r"[а-яё]", name, re.IGNORECASE) and len(name) >= 4:
            stem = _CYRILLIC_VOWEL_END.sub("", name)
            ending = r"\w{0,3}"
        pattern = r"(?<!\w)" + re.escape(stem) + ending + r"(?!\w)"
    found = re.compile(pattern, re.IGNORECASE)
    return any(found.search(text) for text in (memory.content, *memory.keywords))


def about(store: MemoryStore, scope: str, person: str, *, now: datetime) -> list[Memory]:
    """The active memories of this conversation the person noted or that name them."""
    return [m for m in store.active(scope, now=now) if noted_by(m, person) or names(m, person)]


def kept_of(store: MemoryStore, scope: str, person: str) -> list[Memory]:
    """Every memory of this conversation the person noted, expired ones included (they
    are no longer shown, but still kept), by id."""
    ids = [int(json.loads(line)["id"]) for line in store.export(scope)]
    return [m for m in (store.get(scope, i) for i in ids) if noted_by(m, person)]


def forget_noted_by(
    lore: Assembled, scope: str, memory_ids: list[int], person: str, *, by: str, via: str,
    now: datetime,
) -> list[int]:  # fmt: skip
    """Forget those of `memory_ids` still active here and noted by `person`, from memory
    and search alike (`forget_memory`); their ids."""
    forgotten: list[int] = []
    for memory_id in memory_ids:
        try:
            memory = lore.memory.get(scope, memory_id)
        except NotFoundError:
            continue  # already forgotten, or of another conversation
        if memory.status != "active" or not noted_by(memory, person):
            continue
        forget_memory(lore, scope, memory_id, by=by, via=via, now=now)
        forgotten.append(memory_id)
    return forgotten


def memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"


def _listing(memories: list[Memory], person: str) -> str:
    if not memories:
        return f"Nothing in this conversation's memory was noted by {person} or names them."
    lines = [
        f"What this conversation's memory holds about {person} (noted by them or naming them):"
    ]
    for memory in memories:
        lines.append(f"#{memory.id} [{memory.kind}] {memory.content} (noted by {memory.author})")
    return "\n".join(lines)


def _ask_to_forget(lore: Assembled, scope: str, person: str, *, via: str, now: datetime) -> str:
    """Ask the person to confirm forgetting what they noted here; the question's text."""
    mine = kept_of(lore.memory, scope, person)
    if not mine:
        return f"{person} has noted nothing in this conversation's memory; nothing to forget."
    ids = [m.id for m in mine]

    def act() -> str:
        forgotten = forget_noted_by(
            lore, scope, ids, person, by=person, via=via, now=lore.clock.now()
        )
        listed = ", ".join(f"#{i}" for i in forgotten) or "none (already gone)"
        return (
            f"Forgot {memories(len(forgotten))} of {person}'s in this conversation: {listed}. "
            + KEPT_IN_TRANSCRIPT
        )

    lore.confirmations.ask(
        scope, person, act=act, declined=f"Kept {person}'s memories; nothing forgotten.", now=now
    )
    these = "this memory" if len(mine) == 1 else f"these {len(mine)} memories"
    lines = [f"{person}, forget {these} you noted in this conversation?"]
    lines += [f"#{m.id} {m.content}" for m in mine]
    lines.append(f"{person}: reply yes to forget them, no to keep them (only {person} can answer).")
    return "\n".join(lines)


class MyMemoriesTool:
    name = "my_memories"
    description = (
        "List what this conversation's memory holds about the person speaking now: the "
        "memories they noted and those that name them, each with its #id. Call it when "
        "someone asks 'what do you know about me?', '你记得我什么', 'что ты обо мне знаешь'. "
        "It takes no name: it is always about the speaker, in this conversation only."
    )
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, memories: MemoryStore) -> None:
        self._memories = memories

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        found = about(self._memories, ctx.scope, ctx.author, now=ctx.now)
        ctx.shown_memory_ids.update(m.id for m in found)
        return _listing(found, ctx.author)


class ForgetMyMemoriesTool:
    name = "forget_my_memories"
    description = (
        "When the person speaking asks to forget everything they told you ('forget "
        "everything I told you', '忘掉我说过的一切', 'забудь всё, что я тебе говорил'): ask "
        "them to confirm forgetting every memory they noted in this conversation. Nothing "
        "is forgotten yet: show them the returned question word for word; their own yes, "
        "as their next message, forgets (a yes from anyone else does nothing). To forget "
        "one memory use forget with its #id instead."
    )
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, lore: Assembled) -> None:
        self._lore = lore

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return _ask_to_forget(self._lore, ctx.scope, ctx.author, via="tool", now=ctx.now)


def person_commands() -> list[Command]:
    return [
        Command("mine", "what this conversation's memory holds about you, with #ids", _mine),
        Command(
            "forget-mine",
            "forget every memory you noted in this conversation (asks you to confirm)",
            _forget_mine,
        ),
    ]


async def _mine(conversation: CommandContext, args: str) -> str:
    lore = conversation.lore
    found = about(lore.memory, conversation.scope, conversation.author, now=lore.clock.now())
    return _listing(found, conversation.author)


async def _forget_mine(conversation: CommandContext, args: str) -> str:
    lore = conversation.lore
    return _ask_to_forget(
        lore, conversation.scope, conversation.author, via="command", now=lore.clock.now()
    )
