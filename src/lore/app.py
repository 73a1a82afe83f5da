"""The runtime: one object that wires settings, the model, the stores, tools and commands.

Channels create a `Lore` once and ask it for conversations; everything heavy (the
database, the model client) is opened lazily, so `lore --help` stays fast.
"""

from __future__ import annotations

import importlib
from datetime import tzinfo
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lore.clock import Clock, SystemClock, resolve_zone
from lore.config import Config

if TYPE_CHECKING:
    from pathlib import Path

    from lore.backends.local.database import Database
    from lore.backends.local.live import LiveSession
    from lore.backends.local.memories import MemoryStore
    from lore.backends.local.reminders import ReminderStore
    from lore.backends.local.workspace import Workspace
    from lore.core.approval import Approver
    from lore.core.background import Background
    from lore.core.commands import CommandRegistry
    from lore.core.context import ContextSection
    from lore.core.conversation import AfterTurn, Conversation
    from lore.core.tools import ToolRegistry
    from lore.events import Emit
    from lore.llm.base import Provider
    from lore.llm.tokens import TokenCounter

__all__ = ["Lore"]

# Modules that contribute the model's tools (`make_tools(lore)`) and slash commands
# (`make_commands()`), in the order they appear to the model and in /help.
TOOL_MODULES = (
    "lore.memory.tools",
    "lore.reminders.tools",
    "lore.sessions.tools",
    "lore.search.tool",
    "lore.tools.feature",  # file and shell tools, skills: owner-only (its OWNER_ONLY)
)
COMMAND_MODULES = (
    "lore.core.builtin_commands",
    "lore.memory.commands",
    "lore.sessions.commands",
)
# Modules whose `install(lore)` registers after-turn work and context sections.
# Room kept free in the context window beyond the reply: framing, estimate slack.
_MARGIN_TOKENS = 512

LAYER_MODULES = (
    "lore.memory.extraction",
    "lore.memory.lifecycle",
    "lore.search",
    "lore.tools.feature",
)


class Lore:
    def __init__(
        self,
        config: Config,
        *,
        provider: Provider | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self._provider = provider
        self._named_providers: dict[str, Provider] = {}
        # Work run in the background after each successful turn (extraction, ...).
        self.after_turn: list[AfterTurn] = []
        # Extra system-prompt sections, placed after MEMORY.md, before runtime context.
        self.context_sections: list[ContextSection] = []
        for name in LAYER_MODULES:
            _contributions(name, "install", self)

    # -- lazily opened parts ------------------------------------------------------

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            from lore.llm.registry import make_provider

            self._provider = make_provider(self.config)
        return self._provider

    @property
    def context_window(self) -> int:
        """The model's window in tokens: the setting, else what the provider knows."""
        return self.config.context_window or self.provider.context_window

    @property
    def reply_tokens(self) -> int:
        """Room kept for a reply, and the most one may ask for: a request whose prompt
        and max_tokens together pass the window is refused (OpenAI, vLLM)."""
        return min(self.config.max_output_tokens, self.context_window // 4)

    def history_budget(self, fixed_tokens: int) -> int:
        """Tokens the history window may use beside `fixed_tokens` (system prompt, tool
        schemas, the new message), the reply's room and a margin for framing."""
        return max(self.context_window - self.reply_tokens - fixed_tokens - _MARGIN_TOKENS, 0)

    def provider_for(self, model: str) -> Provider:
        """A provider for a named model ("" means the chat model), created once."""
        if not model:
            return self.provider
        if model not in self._named_providers:
            from lore.config import parse_model
            from lore.llm.registry import make_provider

            self._named_providers[model] = make_provider(self.config, parse_model(model))
        return self._named_providers[model]

    @cached_property
    def tokens(self) -> TokenCounter:
        from lore.llm.tokens import TokenCounter

        return TokenCounter(str(self.config.model_spec()))

    @cached_property
    def background(self) -> Background:
        from lore.core.background import Background

        return Background()

    @cached_property
    def zone(self) -> tzinfo:
        return resolve_zone(self.config.timezone)

    @cached_property
    def db(self) -> Database:
        from lore.backends.local.database import Database

        return Database(self.config.db_path)

    @cached_property
    def memory(self) -> MemoryStore:
        from lore.backends.local.memories import MemoryStore

        return MemoryStore(self.db)

    @cached_property
    def reminders(self) -> ReminderStore:
        from lore.backends.local.reminders import ReminderStore

        return ReminderStore(self.db)

    @cached_property
    def workspace(self) -> Workspace:
        from lore.backends.local.workspace import Workspace

        workspace = Workspace(self.config.workspace)
        workspace.ensure()
        return workspace

    def project_workspace(self, root: Path) -> Workspace:
        """A chosen project's folder as the source of AGENTS.md, SOUL.md and USER.md."""
        from lore.backends.local.workspace import Workspace

        return Workspace(root, confined=True)

    @cached_property
    def tools(self) -> ToolRegistry:
        from lore.core.tools import ToolRegistry

        registry = ToolRegistry()
        for name in TOOL_MODULES:
            owner_only = getattr(importlib.import_module(name), "OWNER_ONLY", False)
            for tool in _contributions(name, "make_tools", self):
                registry.add(tool, owner_only=owner_only)
        return registry

    @cached_property
    def commands(self) -> CommandRegistry:
        from lore.core.commands import CommandRegistry

        registry = CommandRegistry()
        for name in COMMAND_MODULES:
            for command in _contributions(name, "make_commands"):
                registry.add(command)
        return registry

    # -- conversations ------------------------------------------------------------

    def session(self, key: str) -> LiveSession:
        from lore.backends.local.live import LiveSession

        return LiveSession(self.config.sessions_dir, key)

    def conversation(
        self,
        key: str,
        *,
        emit: Emit,
        author: str | None = None,
        channel: str = "cli",
        approver: Approver | None = None,
        project: Path | None = None,
    ) -> Conversation:
        from lore.core.conversation import Conversation

        return Conversation(
            self,
            key,
            emit=emit,
            author=author or self.config.user_name,
            channel=channel,
            approver=approver,
            project=project,
        )

    async def aclose(self) -> None:
        if "background" in self.__dict__:
            await self.background.drain()
        for provider in [self._provider, *self._named_providers.values()]:
            if provider is not None:
                await provider.aclose()
        if "db" in self.__dict__:
            self.db.close()


def _contributions(module: str, factory: str, *args: Any) -> list[Any]:
    """What `module.factory(*args)` contributes: tools, commands, or nothing (install)."""
    result: list[Any] | None = getattr(importlib.import_module(module), factory)(*args)
    return result or []
