"""The composition root: `build(config)` picks the backend, opens its stores lazily, and
registers the typed features (memory, reminders, search, sessions) with the core.

Nothing heavy is opened or imported until it is used: `lore remind add` touches the
reminders store and never imports extraction, consolidation or the embedder; a turn
builds the features on its first need. The runtime also owns the bus, through which
every channel sends its messages and receives its events.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import tzinfo
from functools import cached_property
from typing import TYPE_CHECKING

from lore.clock import Clock, SystemClock, resolve_zone
from lore.config import Config

if TYPE_CHECKING:
    from pathlib import Path

    from lore.backends.local.database import Database
    from lore.backends.postgres.backend import PostgresBackend
    from lore.bus import Bus, Conversation
    from lore.core.approval import Approver
    from lore.core.background import Background
    from lore.core.commands import CommandRegistry
    from lore.core.confirmation import Confirmations
    from lore.core.feature import Feature
    from lore.core.tools import ToolRegistry
    from lore.events import Emit, Trust
    from lore.lease_holder import LeaseHolder
    from lore.llm.base import Provider
    from lore.llm.tokens import TokenCounter
    from lore.ports.chat_ledger import ChatLedger
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import HistoryLog, NotesStore, Versions, Workspace
    from lore.ports.outbox import Outbox
    from lore.ports.reminders import ReminderStore
    from lore.ports.search import SearchIndexPort
    from lore.ports.sessions import LiveSession, SessionStore

__all__ = ["Runtime", "build"]

# Room kept free in the context window beyond the reply: framing, estimate slack.
_MARGIN_TOKENS = 512


def build(
    config: Config,
    *,
    provider: Provider | None = None,
    clock: Clock | None = None,
) -> Runtime:
    """The runtime for `config`: the local backend (SQLite + files) and every feature."""
    return Runtime(config, provider=provider, clock=clock)


class Runtime:
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

    # -- the model ----------------------------------------------------------------------

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            from lore.llm.registry import make_provider

            self._provider = make_provider(self.config)
        return self._provider

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
    def confirmations(self) -> Confirmations:
        from lore.core.confirmation import Confirmations

        return Confirmations(self.config.tools.approval_timeout)

    @cached_property
    def tokens(self) -> TokenCounter:
        from lore.llm.tokens import TokenCounter

        return TokenCounter(str(self.config.model_spec()))

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

    @cached_property
    def zone(self) -> tzinfo:
        return resolve_zone(self.config.timezone)

    @cached_property
    def background(self) -> Background:
        from lore.core.background import Background

        return Background()

    # -- the local backend ----------------------------------------------------------------

    @cached_property
    def db(self) -> Database:
        from lore.backends.local.database import Database

        return Database(self.config.db_path)

    # -- PostgreSQL, when `database_url` names it: memories, reminders, outbox, index,
    # sessions and the history log (the workspace's files stay files) -------------------

    @cached_property
    def postgres(self) -> PostgresBackend | None:
        if not self.config.database_url:
            return None
        from lore.backends.postgres.backend import PostgresBackend

        return PostgresBackend(self.config.database_url)

    @cached_property
    def lease_holder(self) -> LeaseHolder:
        """This process as the holder of leases: what it leaves when it ends is taken
        over at once by the next process of this home."""
        from lore.lease_holder import LeaseHolder

        return LeaseHolder(self.config.home / ".holders")

    def close(self) -> None:
        """Close what the stores opened (commands that never start the event loop)."""
        if "lease_holder" in self.__dict__:
            self.lease_holder.close()
        if "db" in self.__dict__:
            self.db.close()
        if self.__dict__.get("postgres") is not None:
            self.__dict__["postgres"].close()

    @cached_property
    def memory(self) -> MemoryStore:
        if self.postgres is not None:
            return self.postgres.memory
        from lore.backends.local.memories import SQLiteMemoryStore

        return SQLiteMemoryStore(self.db)

    @cached_property
    def outbox(self) -> Outbox:
        if self.postgres is not None:
            return self.postgres.outbox
        from lore.backends.local.outbox import LocalOutbox

        return LocalOutbox(self.db)

    @cached_property
    def reminders(self) -> ReminderStore:
        if self.postgres is not None:
            return self.postgres.reminders
        from lore.backends.local.outbox import LocalOutbox
        from lore.backends.local.reminders import SQLiteReminderStore

        outbox = self.outbox
        assert isinstance(outbox, LocalOutbox)
        return SQLiteReminderStore(self.db, outbox)

    @cached_property
    def chat_ledger(self) -> ChatLedger:
        """What LINE and Telegram must still know after a restart (received updates,
        the ids of messages Lore sent)."""
        if self.postgres is not None:
            return self.postgres.chat_ledger
        from lore.backends.local.chat_ledger import LocalChatLedger

        return LocalChatLedger(self.db)

    @cached_property
    def search_index(self) -> SearchIndexPort:
        if self.postgres is not None:
            return self.postgres.search_index
        from lore.backends.local.search_index import SearchIndex

        return SearchIndex(self.db)

    @cached_property
    def sessions(self) -> SessionStore:
        if self.postgres is not None:
            return self.postgres.sessions
        from lore.backends.local.sessions import LocalSessions

        return LocalSessions(self.config.sessions_dir, self.config.home)

    @cached_property
    def workspace(self) -> Workspace:
        from lore.backends.local.workspace import Workspace as LocalWorkspace

        workspace = LocalWorkspace(self.config.workspace)
        workspace.ensure()
        return workspace

    def project_workspace(self, root: Path) -> Workspace:
        """A chosen project's folder as the source of AGENTS.md, SOUL.md and USER.md."""
        from lore.backends.local.workspace import Workspace as LocalWorkspace

        return LocalWorkspace(root, confined=True)

    @cached_property
    def notes(self) -> NotesStore:
        from lore.backends.local.notes import LocalNotes

        return LocalNotes(self.workspace.root)

    @cached_property
    def versions(self) -> Versions:
        from lore.backends.local.workspace_git import WorkspaceGit

        return WorkspaceGit(self.workspace.root)

    @cached_property
    def history(self) -> HistoryLog:
        if self.postgres is not None:
            return self.postgres.history
        from lore.backends.local.history import History

        return History(self.workspace.memory_dir)

    def session(self, key: str) -> LiveSession:
        return self.sessions.live(key)

    # -- one worker at a time: single-writer jobs -----------------------------------------

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        if self.postgres is not None:
            return self.postgres.locks.hold(f"job:{job}", wait=False)
        if path is None:
            return nullcontext(True)
        from lore.files import try_lock

        return try_lock(path)

    # -- features -------------------------------------------------------------------------

    @cached_property
    def features(self) -> list[Feature]:
        """Every feature, in the order its tools appear to the model and in /help."""
        from lore.core.builtin_commands import core_feature
        from lore.memory.feature import memory_feature
        from lore.reminders.feature import reminders_feature
        from lore.search.feature import search_feature
        from lore.sessions.feature import sessions_feature
        from lore.tools.feature import tools_feature

        return [
            core_feature(self),
            memory_feature(self),
            reminders_feature(self),
            sessions_feature(self),
            search_feature(self),
            tools_feature(self),
        ]

    @cached_property
    def tools(self) -> ToolRegistry:
        from lore.core.tools import ToolRegistry

        registry = ToolRegistry()
        for feature in self.features:
            for tool in feature.tools:
                registry.add(tool, owner_only=feature.owner_only)
        return registry

    @cached_property
    def commands(self) -> CommandRegistry:
        from lore.core.commands import CommandRegistry

        registry = CommandRegistry()
        for feature in self.features:
            for command in feature.commands:
                registry.add(command)
        return registry

    # -- conversations ----------------------------------------------------------------------

    @cached_property
    def bus(self) -> Bus:
        from lore.bus import Bus

        return Bus(self)

    def conversation(
        self,
        key: str,
        *,
        emit: Emit,
        author: str | None = None,
        channel: str = "cli",
        trust: Trust = "owner",
        approver: Approver | None = None,
        project: Path | None = None,
    ) -> Conversation:
        """A handle on one conversation for a channel with one speaker (the terminal)."""
        from lore.bus import Conversation

        return Conversation(
            self.bus,
            key,
            emit=emit,
            author=author or self.config.user_name,
            channel=channel,
            trust=trust,
            approver=approver,
            project=project,
        )

    async def aclose(self) -> None:
        if "background" in self.__dict__:
            await self.background.drain()
        for provider in [self._provider, *self._named_providers.values()]:
            if provider is not None:
                await provider.aclose()
        self.close()
