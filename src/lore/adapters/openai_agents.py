"""The OpenAI Agents SDK's `Session` over a Lore conversation (`pip install
'lore-assistant[agents]'`): an agent's history lives in Lore's transcript of the scope,
so a second run (another process, another day) goes on from the first, `lore sessions`
lists it once it is closed, and Lore's memory block can be the agent's instructions.

    async with AsyncMemory(home="agent-home") as memory:
        session = LoreSession(memory, "api:alice")
        agent = Agent(name="helper", instructions=session.instructions("Be brief."))
        result = await Runner.run(agent, "I moved to Taipei", session=session)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from lore.adapters.history import History, block_text, missing, plain, text_of

try:
    from agents.memory.session_settings import resolve_session_limit
except ImportError as exc:
    raise ImportError(missing("openai_agents", "the OpenAI Agents SDK", "agents")) from exc

if TYPE_CHECKING:
    from agents import Agent, RunContextWrapper, TResponseInputItem
    from agents.memory import SessionSettings

    from lore.embedded import AsyncMemory, Memory
    from lore.messages import Message, Role, ToolCallRecord

__all__ = ["LoreSession"]

FRAMEWORK = "openai-agents"
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


class LoreSession:
    """A `Session` (the SDK's protocol) whose items are the messages of Lore's live
    session for `scope` (default: the memory's own scope). `pop_item` marks the item
    taken back; `clear_session` archives the conversation and starts a fresh one."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        scope: str | None = None,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self._history = History(memory, scope, FRAMEWORK, _native)
        self.session_id = self._history.scope
        self.session_settings = session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and wanted < 0:
            wanted = None  # the SDK's own sessions read a negative limit as no limit
        items = await asyncio.to_thread(self._history.items, wanted)
        return cast("list[TResponseInputItem]", items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        messages = [self._message(item) for item in items]
        await asyncio.to_thread(self._history.append, messages)

    async def pop_item(self) -> TResponseInputItem | None:
        return cast("TResponseInputItem | None", await asyncio.to_thread(self._history.pop))

    async def clear_session(self) -> None:
        await self._history.aclose()

    def instructions(
        self, base: str = ""
    ) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
        """Dynamic instructions for an `Agent`: `base`, then the memory block exactly as
        Lore's own turn injects it for this conversation, read afresh at each run."""

        async def instructions(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            block = await block_text(self._history.memory, self.session_id)
            return "\n\n".join(part for part in (base.strip(), block) if part)

        return instructions

    def _message(self, item: TResponseInputItem) -> Message:
        data = plain(item, FRAMEWORK)
        history, kind = self._history, data.get("type")
        if kind == "function_call":
            call: ToolCallRecord = {
                "id": str(data.get("call_id", "")),
                "name": str(data.get("name", "")),
                "arguments": str(data.get("arguments", "")),
            }
            return history.message("assistant", "", data, tool_calls=[call])
        if kind == "function_call_output":
            output = text_of(data.get("output"))
            return history.message("tool", output, data, tool_call_id=str(data.get("call_id", "")))
        role: Role | None = _ROLES.get(str(data.get("role")))
        if kind in (None, "message") and role is not None:
            return history.message(role, text_of(data.get("content")), data)
        return history.message("assistant", "", data)  # reasoning and other output items


def _native(message: Message) -> dict[str, Any] | None:
    """A text turn another program stored (`lore chat`, the gateway) as an input item."""
    text = text_of(message.get("content"))
    if message["role"] in ("user", "assistant") and text and not message.get("tool_calls"):
        return {"role": message["role"], "content": text}
    return None
