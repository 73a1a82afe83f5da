"""Automatic memory extraction: after a reply, one model call proposes add/update/delete.

The reply never waits for it. The model sees only the latest exchange and the scope's
candidate memories; the code trusts nothing it returns: the reply is validated whole
(unknown ids, malformed JSON → rejected) and applied in one transaction, or not at all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lore.errors import DatabaseUnavailable, InvalidInputError, LoreError, NotFoundError
from lore.events import Notice
from lore.llm.base import ChatRequest, Provider, complete
from lore.ports.memories import MAX_KEYWORD, MAX_KEYWORDS, Memory, MemoryStore, Source

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from lore.clock import Clock
    from lore.config import Config
    from lore.core.feature import CompletedTurn
    from lore.events import Emit
    from lore.llm.base import Provider
    from lore.ports.memories import MemoryStore

__all__ = [
    "ExtractionServices",
    "EXTRACTION_PROMPT",
    "ExtractionRejected",
    "extraction_provider",
    "Op",
    "apply_ops",
    "extract",
    "parse_ops",
]

log = logging.getLogger(__name__)

_SEARCHED = 8  # candidates matched by search on what the user said
_RECENT = 12  # plus the most recently updated
_ATTEMPTS = 2  # the first try and at most one retry

EXTRACTION_PROMPT = """\
You maintain the long-term memory of a personal assistant. Read the latest exchange and \
decide which durable facts about the user (or their family, work and plans) to add, \
correct or delete. Reply with a JSON array of operations and nothing else:
  {"op": "add", "content": "...", "kind": "profile|preference|fact|plan|relation|event", \
"keywords": ["...", "..."]}
  {"op": "update", "id": 12, "content": "..."}
  {"op": "delete", "id": 12}
Reply [] when nothing durable was said. Most exchanges need [].

Rules, each with a right and a wrong example:
1. Every note must be stated or clearly confirmed by the user in <user>. Read <assistant> \
only to understand what the user meant; never copy its explanations, suggestions or lists, \
and add no detail the user did not say.
   User: "I'm learning OAuth." Assistant explains PKCE and OpenID Connect.
   Right: add "The user is learning OAuth". Wrong: add "The user is learning OAuth, \
focusing on PKCE and OIDC".
2. When the user corrects something ("actually", "not X but Y", "we moved", "其实", \
"不是…而是…", "на самом деле"), update the old note by its id in this same reply; do not \
add a second, contradicting note.
   Memory #3 "The user is learning OAuth"; user: "actually, I'm learning FTS".
   Right: {"op": "update", "id": 3, "content": "The user is learning FTS"}. Wrong: add \
"The user is learning FTS" and keep #3.
3. When the user says a fact is no longer true or asks to forget it, delete it by its id.
   Memory #5 "John lives in Hualien"; user: "forget where I live". Right: \
{"op": "delete", "id": 5}. Wrong: add "John does not want his address remembered".
4. One durable fact per note, short, in the user's language, naming the person.
   Right: "John's wife's birthday is March 3". Wrong: "John's wife's birthday is March 3, \
he likes coffee and lives in Taipei".
5. Nothing transient: moods, today's weather, one-off tasks. A one-shot todo ("remind me \
in 10 minutes", "提醒我明天开会") is a reminder the assistant handles, never a note.
   User: "I'm tired today." Right: []. Wrong: add "The user is tired".
6. Nothing secret: never store passwords, API keys, tokens, card or ID numbers.
   User: "my wifi password is hunter2". Right: []. Wrong: add "Wifi password: hunter2".
7. Keywords: 3-8 synonyms and broader terms, in the user's language and in English, so the \
note can be found by words it does not contain (美式咖啡 → 咖啡, 提神, coffee, caffeine).
8. Only ids listed under <memories> may be updated or deleted. Do not repeat a note that \
already exists."""


class ExtractionServices(Protocol):
    """What extraction uses."""

    config: Config
    clock: Clock

    @property
    def provider(self) -> Provider: ...

    @property
    def memory(self) -> MemoryStore: ...

    def provider_for(self, model: str) -> Provider: ...


class ExtractionRejected(LoreError):
    """The extraction reply was invalid as a whole; nothing was applied."""


@dataclass(frozen=True)
class Op:
    op: str  # add | update | delete
    id: int | None = None
    content: str = ""
    kind: str = "fact"
    keywords: tuple[str, ...] = ()


async def extract_after_turn(
    lore: ExtractionServices,
    turn: CompletedTurn,
    emit: Emit,
    *,
    forget: Callable[[int], object] | None = None,
) -> None:
    """The after-turn hook: extraction for the turn just persisted, notices to the user;
    `forget` erases a memory of the turn's scope as every surface does."""
    provider = extraction_provider(lore)
    if provider is None:
        return
    notices = await extract(lore, provider, turn, forget=forget)
    for text in notices:
        emit(Notice(text))


async def extract(
    lore: ExtractionServices,
    provider: Provider,
    turn: CompletedTurn,
    *,
    forget: Callable[[int], object] | None = None,
    strict: bool = False,
    said_at: datetime | None = None,
) -> list[str]:
    """Run extraction for one turn (retried once); returns the notices for the user.
    After a turn a failure only logs (the reply was already given); `strict` raises the
    last error instead (a program's add must know that nothing was noted). `said_at`: an
    exchange from the past (an import): its memories are dated then, and it never
    corrects or deletes a memory changed after it (an old fact never overrides a newer)."""
    now = said_at or lore.clock.now()
    # The store's work (a search by the whole message, then the writes) runs in a worker
    # thread: a long message must not hold up the event loop, and every channel on it.
    candidates = await asyncio.to_thread(candidate_memories, lore, turn.scope, turn.user_text)
    request = ChatRequest(
        system=EXTRACTION_PROMPT,
        messages=[{"role": "user", "content": _exchange(turn, candidates)}],
        max_tokens=1024,
        temperature=0.0,
    )
    last_error: Exception | None = None
    for attempt in range(_ATTEMPTS):
        try:
            completion = await complete(provider, request)
            ops = parse_ops(completion.text, {m.id for m in candidates})
            if said_at is not None:
                newer = {m.id for m in candidates if m.updated_at > said_at}
                ops = [op for op in ops if op.op == "add" or op.id not in newer]
            # A turn outside any conversation (a program's add) has no source message.
            source = Source(turn.session_id, turn.user_index) if turn.session_id else None
            return await asyncio.to_thread(
                apply_ops,
                lore.memory,
                turn.scope,
                ops,
                author=turn.author,
                source=source,
                now=now,
                forget=forget,
            )
        except DatabaseUnavailable:
            raise  # the background runs the whole extraction again once it is back
        except LoreError as exc:
            last_error = exc
            log.info("extraction attempt %d for %s failed: %s", attempt + 1, turn.scope, exc)
    log.warning("extraction gave up for %s: %s", turn.scope, last_error)
    if strict and last_error is not None:
        raise last_error
    return []


def candidate_memories(lore: ExtractionServices, scope: str, user_text: str) -> list[Memory]:
    """Memories the model may touch: those matching what the user said, then the newest."""
    now = lore.clock.now()
    found: dict[int, Memory] = {}
    try:
        matched = lore.memory.search(scope, user_text, now=now, limit=_SEARCHED)
    except DatabaseUnavailable:
        raise
    except LoreError:
        matched = []
    for memory in [*matched, *lore.memory.active(scope, now=now, limit=_RECENT)]:
        found.setdefault(memory.id, memory)
    return list(found.values())


def _exchange(turn: CompletedTurn, candidates: list[Memory]) -> str:
    lines = [f"#{m.id} [{m.kind}] {_fence(m.content)}" for m in candidates] or ["(none)"]
    return (
        "<memories>\n" + "\n".join(lines) + "\n</memories>\n\n"
        f"<user>\n{_fence(turn.user_text)}\n</user>\n\n"
        f"<assistant>\n{_fence(turn.reply_text)}\n</assistant>"
    )


def _fence(text: str) -> str:
    """No text (either side of the exchange, or a memory) can close or open a tag."""
    return re.sub(r"</?\s*(user|assistant|memories)\s*>", "", text, flags=re.IGNORECASE)


# -- parsing and applying -------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_ops(text: str, candidate_ids: set[int]) -> list[Op]:
    """Read the reply as a whole: JSON array (possibly in prose or a code fence), or reject."""
    data = _json_payload(text)
    if isinstance(data, dict) and isinstance(data.get("operations"), list):
        data = data["operations"]
    if not isinstance(data, list):
        raise ExtractionRejected("the extraction reply is not a JSON array of operations")
    ops: list[Op] = []
    for number, item in enumerate(data, 1):
        if not isinstance(item, dict):
            raise ExtractionRejected(f"operation {number} is not an object")
        kind = item.get("op")
        if kind == "add":
            ops.append(
                Op(
                    "add",
                    content=_text(item, "content", number),
                    kind=str(item.get("kind") or "fact"),
                    keywords=_keywords(item.get("keywords"), number),
                )
            )
        elif kind in ("update", "delete"):
            memory_id = _id(item.get("id"), number)
            if memory_id not in candidate_ids:
                # Only ids shown this time may change: a bad reply cannot touch others.
                raise ExtractionRejected(f"operation {number} names #{memory_id}, not shown")
            content = _text(item, "content", number) if kind == "update" else ""
            ops.append(Op(kind, id=memory_id, content=content, kind=str(item.get("kind") or "")))
        else:
            raise ExtractionRejected(f"operation {number} has an unknown op {kind!r}")
    return ops


def _json_payload(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    # Never quote the reply: it echoes what the user said, and this message is logged.
    raise ExtractionRejected(f"the extraction reply is not valid JSON ({len(text)} characters)")


def _text(item: dict[str, Any], field: str, number: int) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ExtractionRejected(f"operation {number} needs a non-empty '{field}'")
    return value.strip()


def _id(value: Any, number: int) -> int:
    if isinstance(value, str):
        value = value.strip().lstrip("#")
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise ExtractionRejected(f"operation {number} has no valid id") from None


def _keywords(value: Any, number: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise ExtractionRejected(f"operation {number} has malformed keywords")
    # Keywords only help finding the fact: trim what the store would refuse, keep the fact.
    words = [k.strip() for k in value if k.strip() and len(k.strip()) <= MAX_KEYWORD]
    return tuple(words[:MAX_KEYWORDS])


def apply_ops(
    store: MemoryStore,
    scope: str,
    ops: list[Op],
    *,
    author: str,
    source: Source | None,
    now: Any,
    forget: Callable[[int], object] | None = None,
) -> list[str]:
    """Apply validated ops in one transaction. Oversize or secret content is dropped.

    With `forget` (the way every surface forgets, so search drops what restated the
    memory), deletes go through it first, each its own transaction, and the rest follow
    in one."""
    notices: list[str] = []
    if forget is not None:
        for op in ops:
            if op.op == "delete" and op.id is not None:
                try:
                    forget(op.id)
                    notices.append(f"forgot #{op.id}")
                except NotFoundError as exc:
                    log.warning("extraction dropped a delete for %s: %s", scope, exc)
        ops = [op for op in ops if op.op != "delete"]
    with store.batch():
        for op in ops:
            try:
                if op.op == "add":
                    memory, created = store.remember(
                        scope,
                        op.content,
                        kind=op.kind,
                        keywords=op.keywords,
                        author=author,
                        via="extraction",
                        now=now,
                        source=source,
                    )
                    if created:
                        notices.append(f"noted #{memory.id} {_short(memory.content)}")
                elif op.op == "update" and op.id is not None:
                    memory = store.supersede(
                        scope,
                        op.id,
                        op.content,
                        kind=op.kind or None,
                        author=author,
                        via="extraction",
                        now=now,
                        source=source,
                    )
                    notices.append(f"updated #{op.id} → #{memory.id} {_short(memory.content)}")
                elif op.op == "delete" and op.id is not None:
                    store.forget(scope, op.id, by=author, via="extraction", now=now)
                    notices.append(f"forgot #{op.id}")
            except (InvalidInputError, NotFoundError) as exc:
                # Too long, secret-looking, a bad kind, a memory already gone (forgotten
                # meanwhile, or deleted by an earlier op): this op is dropped, the rest stand.
                log.warning("extraction dropped an %s for %s: %s", op.op, scope, exc)
    return notices


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def extraction_provider(lore: ExtractionServices) -> Provider | None:
    """The configured extraction model, else the chat model when it can follow a format."""
    if lore.config.extraction.model:
        return lore.provider_for(lore.config.extraction.model)
    provider = lore.provider
    # The small offline model cannot produce the JSON reliably; it would only burn CPU.
    return provider if provider.supports_tools else None
