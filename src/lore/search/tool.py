"""The model's search tool: memory_search over memories, notes and archived sessions.

Injection covers what should shape every answer; this finds the rest ("what did we
decide about the API?", "which session was about Redis?"), in any language, and says
where each snippet came from so the model can open the exact transcript next.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lore.core.provenance import SourceRef
from lore.core.tools import ToolContext, optional_int, required_str
from lore.errors import InvalidInputError, ToolError

if TYPE_CHECKING:
    from lore.core.services import Services
    from lore.search.hybrid import Hit

__all__ = ["MemorySearchTool"]

DEFAULT_LIMIT = 8
MAX_LIMIT = 20

_DESCRIPTION = (
    "Search everything remembered in this conversation beyond the <long_term_memory> "
    "block: stored memories, notes and summaries, and every message of past (archived) "
    "sessions. Use it for 'what did we decide about…', 'which session was about…', "
    "'what exactly did I say last week…', or whenever the answer may be in an earlier "
    "conversation. It matches meaning as well as words, in any language; phrase the query "
    "as the thing you are looking for. When the question is about a time, pass it: `when` "
    "('last week', '2023-05', '上个月', 'в прошлом году') or `after`/`before` (a date or "
    "such a phrase) keep only what was said then. Each result is one line with the date "
    "it was said and who said it; for a session message, the session_history call it "
    "shows reads the exact context. Not for storing anything (that is remember) and not "
    "for reminders."
)


class MemorySearchTool:
    name = "memory_search"
    description = _DESCRIPTION
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for, in any language"},
            "when": {
                "type": "string",
                "description": "only what was said in this span: 'last week', '2023-05', "
                "'yesterday', '上个月', 'в прошлом году'",
            },
            "after": {
                "type": "string",
                "description": "only what was said from this date or phrase on",
            },
            "before": {
                "type": "string",
                "description": "only what was said before this date or phrase",
            },
            "limit": {
                "type": "integer",
                "description": f"how many results (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})",
                "minimum": 1,
                "maximum": MAX_LIMIT,
            },
        },
        "required": ["query"],
    }

    def __init__(self, lore: Services) -> None:
        self._lore = lore

    def search(
        self,
        query: str,
        ctx: ToolContext,
        limit: int = DEFAULT_LIMIT,
        *,
        when: str | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> list[Hit]:
        """The hits the tool reports (the retrieval benchmark calls this too). A time
        phrase resolves against the turn's own time; a bad one raises InvalidInputError."""
        from lore.search import searcher
        from lore.search.timespan import time_range

        start, end, span = time_range(
            when=when, after=after, before=before, now=ctx.now, zone=self._lore.zone
        )
        return searcher(self._lore).search(
            query, ctx.scope, limit=limit, now=ctx.now, after=start, before=end, about=span
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from lore.search import format_hits, searcher

        query = required_str(args, "query")
        limit = optional_int(args, "limit", DEFAULT_LIMIT)
        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"'limit' must be between 1 and {MAX_LIMIT}")
        times = {name: _optional_text(args, name) for name in ("when", "after", "before")}
        try:
            hits = await asyncio.to_thread(self.search, query, ctx, limit, **times)
        except InvalidInputError as exc:
            raise ToolError(str(exc)) from None
        waiting = await asyncio.to_thread(searcher(self._lore).index.pending_vectors)
        # A memory shown here (from this scope only) may be forgotten by its id, like one
        # shown in the block: beyond the block's window this is how the model sees it.
        ctx.shown_memory_ids.update(h.entry.locator for h in hits if h.entry.kind == "memory")
        for hit in hits:
            e = hit.entry
            ctx.provenance.found(SourceRef(e.kind, e.source, e.locator, e.at, self.name))
        note = _text_only_note(waiting)
        span = " ".join(f"{k} {v!r}" for k, v in times.items() if v)
        if not hits:
            where = f" ({span})" if span else ""
            return f"Nothing found for {query!r}{where} in this conversation's memory.{note}"
        body = format_hits(hits, query, self._lore.zone)
        where = f", {span}" if span else ""
        return f"{len(hits)} result(s) for {query!r}{where}, best first:\n{body}{note}"


def _optional_text(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ToolError(f"'{name}' must be a string")
    return value


def _text_only_note(waiting: int) -> str:
    """Said when part of the index has no vectors yet (after an import): those entries
    match by words only, so a search by meaning may miss them."""
    if not waiting:
        return ""
    return (
        f"\n(Text-only for {waiting} entries not yet embedded: they match by words only "
        "until `lore serve` or `lore index rebuild` embeds them.)"
    )
