"""Memories from imported history, by the model, with the owner's consent.

An import leaves its conversations as searchable history. Extraction then reads the
user's side of each, exchange by exchange, through the same code as live extraction
(user-only, corrections supersede, ids validated, secrets refused), newest conversations
first and each exchange dated when it was said, so an old fact never overrides a newer
one. Nothing is sent before the owner agrees (`lore import extract ID`, or `--yes`): the
estimate says how many conversations and about how many tokens would go to which model.

The job's state lives in the import's record (`extraction`): `queued` once agreed,
`paused` when asked, `done` at the end, and the conversations finished so far, saved
after each one, so a job stopped (Ctrl+C, a restart of `lore serve`) goes on where it
stopped. `lore serve` runs queued jobs in its background.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lore.errors import DatabaseUnavailable, InvalidInputError, LoreError
from lore.import_job import import_ledger
from lore.sessions.importing import ImportRecord

if TYPE_CHECKING:
    from lore.core.feature import Assembled
    from lore.llm.base import Message, Provider

__all__ = [
    "Estimate",
    "estimate",
    "extract_import",
    "extraction_forever",
    "extractor",
    "pause",
    "queue",
]

log = logging.getLogger(__name__)

_PROMPT_TOKENS = 900  # the extraction prompt and the memories shown with each exchange
_POLL_SECONDS = 30.0  # how often `lore serve` looks for a job agreed to


@dataclass(frozen=True)
class Estimate:
    conversations: int
    exchanges: int
    tokens: int
    model: str


def extractor(lore: Assembled) -> Provider | None:
    """The extraction model, unless extraction is turned off or no model can do it (none
    configured, or only the small offline one)."""
    from lore.memory.extraction import extraction_provider

    if not lore.config.extraction.enabled:
        return None
    try:
        return extraction_provider(lore)
    except LoreError:
        return None


def estimate(lore: Assembled, record: ImportRecord) -> Estimate:
    """What extracting `record`'s conversations would send: one request per exchange."""
    exchanges = tokens = conversations = 0
    for _, messages in _conversations(lore, record, pending_only=True):
        pairs = _exchanges(messages)
        conversations += bool(pairs)
        exchanges += len(pairs)
        tokens += sum(
            _PROMPT_TOKENS + lore.tokens.count(user) + lore.tokens.count(reply)
            for user, reply, _, _ in pairs
        )
    return Estimate(conversations, exchanges, tokens, lore.config.extraction.model or "")


def queue(lore: Assembled, import_id: str) -> ImportRecord:
    """The owner agreed: the job may run (here or in `lore serve`)."""
    ledger = import_ledger(lore)
    record = ledger.get(import_id)
    if record.undone_at is not None:
        raise InvalidInputError(f"import {record.id} was undone ({record.undone_at})")
    state = _state(record)
    if state.get("state") != "done":
        state["state"] = "queued"
        ledger.save(record)
    return record


def pause(lore: Assembled, import_id: str) -> ImportRecord:
    """Stop the job after the conversation in hand; `queue` goes on from there."""
    ledger = import_ledger(lore)
    record = ledger.get(import_id)
    state = _state(record)
    if state.get("state") in ("queued", None):
        state["state"] = "paused"
        ledger.save(record)
    return record


async def extract_import(
    lore: Assembled,
    import_id: str,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> ImportRecord:
    """Run the agreed job to its end (or until paused): each conversation's exchanges in
    order, newest conversation first; `progress(done, total)` after each conversation."""
    provider = extractor(lore)
    if provider is None:
        raise InvalidInputError(
            "no extraction model: set a model (or [extraction] model) and enable extraction"
        )
    ledger = import_ledger(lore)
    record = ledger.get(import_id)
    state = _state(record)
    if state.get("state") != "queued":
        raise InvalidInputError(
            f"import {record.id}: extraction is {state.get('state') or 'not agreed to'}; "
            f"`lore import extract {record.id}` agrees to it"
        )
    pending = await asyncio.to_thread(_conversations, lore, record, True)
    total = len(pending) + len(state["done"])
    for session_id, messages in pending:
        fresh = ledger.get(record.id)  # paused or undone meanwhile, by another process
        if fresh.undone_at is not None or _state(fresh).get("state") != "queued":
            return fresh
        state["notes"] = int(state.get("notes", 0)) + await _extract_one(
            lore, provider, record, session_id, messages
        )
        state["done"].append(session_id)
        await asyncio.to_thread(ledger.save, record)
        if progress is not None:
            progress(len(state["done"]), total)
    state["state"] = "done"
    await asyncio.to_thread(ledger.save, record)
    return record


async def extraction_forever(
    lore: Assembled, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> None:
    """`lore serve`'s loop: run each job agreed to, one at a time, oldest import first."""
    while True:
        if extractor(lore) is not None:
            records = await asyncio.to_thread(import_ledger(lore).records)
            for record in records:
                if record.undone_at is None and _state(record).get("state") == "queued":
                    try:
                        done = await extract_import(lore, record.id)
                    except DatabaseUnavailable:
                        break  # the next round, once it is back
                    except LoreError as exc:
                        log.warning("extraction of import %s stopped: %s", record.id, exc)
                        continue
                    log.info(
                        "extraction of import %s: %s, %d memories",
                        done.id,
                        _state(done).get("state"),
                        int(_state(done).get("notes", 0)),
                    )
        await sleep(_POLL_SECONDS)


# -- one conversation ---------------------------------------------------------------------


async def _extract_one(
    lore: Assembled,
    provider: Provider,
    record: ImportRecord,
    session_id: str,
    messages: list[Message],
) -> int:
    """Each exchange of the conversation through live extraction, dated when said; the
    memories it noted (a notice each)."""
    from lore.core.feature import CompletedTurn
    from lore.memory.extraction import extract

    noted = 0
    for user, reply, index, said_at in _exchanges(messages):
        turn = CompletedTurn(
            scope=record.scope,
            author=lore.config.user_name,
            channel="import",
            session_id=session_id,
            user_index=index,
            user_text=user,
            reply_text=reply,
            messages=[],
        )
        notices = await extract(lore, provider, turn, said_at=said_at)
        noted += sum(notice.startswith("noted") for notice in notices)
    return noted


def _conversations(
    lore: Assembled, record: ImportRecord, pending_only: bool
) -> list[tuple[str, list[Message]]]:
    """The import's archived conversations (not its facts), newest first."""
    wanted = {item["session_id"] for item in record.sessions}
    done = set(_state(record).get("done", ())) if pending_only else set()
    archive = lore.sessions.archive
    entries = [e for e in archive.entries() if e.session_id in wanted and e.session_id not in done]
    entries.sort(key=lambda e: e.updated_at, reverse=True)
    found = []
    for entry in entries:
        extra = archive.metadata(entry).get("extra") or {}
        if extra.get("facts"):
            continue  # facts another agent kept are memories already
        messages, _ = archive.read_messages(entry)
        found.append((entry.session_id, messages))
    return found


def _exchanges(messages: list[Message]) -> list[tuple[str, str, int, datetime | None]]:
    """(what the user said, the reply to it, the user message's index, when it was said)."""
    found = []
    for index, message in enumerate(messages):
        if message.get("role") != "user" or not str(message.get("content") or "").strip():
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        reply = following if following and following.get("role") == "assistant" else None
        said = _when(message.get("timestamp"))
        found.append(
            (str(message["content"]), str(reply.get("content") or "") if reply else "", index, said)
        )
    return found


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _state(record: ImportRecord) -> dict[str, Any]:
    state = record.extraction
    state.setdefault("done", [])
    return state
