"""The search feature: memory_search, and indexing what each turn wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import Feature

if TYPE_CHECKING:
    from lore.core.feature import CompletedTurn, Forgotten
    from lore.core.services import Services
    from lore.events import Emit

__all__ = ["search_feature"]


def search_feature(lore: Services) -> Feature:
    from lore.search import index_after_turn
    from lore.search.forgotten import hide_forgotten
    from lore.search.tool import MemorySearchTool

    async def index(turn: CompletedTurn, emit: Emit) -> None:
        await index_after_turn(lore, turn, emit)

    def forgotten(what: Forgotten) -> None:
        hide_forgotten(lore, what)

    return Feature(
        "search", tools=[MemorySearchTool(lore)], after_turn=[index], memory_forgotten=[forgotten]
    )
