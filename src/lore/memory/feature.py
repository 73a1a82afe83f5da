"""The memory feature: remember/forget, each person's own memories, the memory block in
every prompt, MEMORY.md, recent and archived history, extraction and consolidation after
each turn, a summary of each closed session, Dream."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.feature import AfterTurn, ContextSection, Feature

if TYPE_CHECKING:
    from lore.core.feature import Assembled, CompletedTurn
    from lore.core.tools import ToolContext
    from lore.events import Emit
    from lore.ports.sessions import ArchivedSession

__all__ = ["memory_feature"]


def memory_feature(lore: Assembled) -> Feature:
    from lore.memory.commands import dream_commands, memory_commands
    from lore.memory.consolidation import consolidate_after_turn
    from lore.memory.lifecycle import archived_summary_section, recent_history_section
    from lore.memory.persons import ForgetMyMemoriesTool, MyMemoriesTool, person_commands
    from lore.memory.session_summary import schedule_summary
    from lore.memory.tools import ForgetTool, RememberTool

    def memory_sections(ctx: ToolContext) -> str | None:
        return _memory_sections(lore, ctx)

    def recent_history(ctx: ToolContext) -> str | None:
        return recent_history_section(lore, ctx)

    def archived_summary(ctx: ToolContext) -> str | None:
        return archived_summary_section(lore, ctx)

    async def consolidation(turn: CompletedTurn, emit: Emit) -> None:
        await consolidate_after_turn(lore, turn, emit)

    def summarise(entry: ArchivedSession, emit: Emit | None) -> None:
        schedule_summary(lore, entry, emit=emit)

    after: list[AfterTurn] = []
    if lore.config.extraction.enabled:
        from lore.memory.extraction import extract_after_turn

        async def extraction(turn: CompletedTurn, emit: Emit) -> None:
            from lore.core.forgetting import forget_memory

            def forget(memory_id: int) -> object:
                return forget_memory(
                    lore,
                    turn.scope,
                    memory_id,
                    by=turn.author,
                    via="extraction",
                    now=lore.clock.now(),
                    turn=(turn.session_id, turn.user_index),
                )

            await extract_after_turn(lore, turn, emit, forget=forget)

        after.append(extraction)
    after.append(consolidation)
    sections: list[ContextSection] = [memory_sections, recent_history, archived_summary]
    return Feature(
        "memory",
        tools=[
            RememberTool(lore.memory),
            ForgetTool(lore),
            MyMemoriesTool(lore.memory),
            ForgetMyMemoriesTool(lore),
        ],
        commands=[*memory_commands(), *person_commands(), *dream_commands()],
        sections=sections,
        after_turn=after,
        session_closed=[summarise],
    )


def _memory_sections(lore: Assembled, ctx: ToolContext) -> str | None:
    """How memory works (when the model has tools), the block, and MEMORY.md (owner)."""
    from lore.memory.block import MEMORY_GUIDE, scope_block

    block = scope_block(lore, ctx.scope, now=ctx.now)
    ctx.shown_memory_ids.update(block.shown_ids)
    ctx.provenance.shown_memories(block.shown_ids)
    parts = [MEMORY_GUIDE] if ctx.tools_enabled else []
    parts.append(block.text)
    memory_md = lore.workspace.read("MEMORY.md") if lore.config.is_owner_scope(ctx.scope) else None
    if memory_md:
        ctx.provenance.read("MEMORY.md")
        parts.append(f"# MEMORY.md (curated notes)\n\n{memory_md}")
    return "\n\n---\n\n".join(parts)
