"""The composition root: `build(config)` picks the backend, opens its stores lazily, and
registers the typed features (memory, reminders, search, sessions) with the core.

Nothing heavy is opened or imported until it is used: `lore remind add` touches the
reminders store and never imports extraction, consolidation or the embedder; a turn
builds the features on its first need. The runtime also owns the bus, through which
every channel sends its messages and receives its events.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import tzinfo
from functools import cached_property
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from lore.clock import Clock, SystemClock, resolve_zone
from lore.config import Config, redact_url

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
    from lore.embed import Embedder
    from lore.events import Emit, Trust
    from lore.lease_holder import LeaseHolder
    from lore.llm.base import Provider
    from lore.llm.tokens import TokenCounter
    from lore.ports.backend import Backend, DatabaseState
    from lore.ports.backups import Backups
    from lore.ports.chat_ledger import ChatLedger
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import HistoryLog, NotesStore, Versions, Workspace
    from lore.ports.outbox import Outbox
    from lore.ports.reminders import ReminderStore
    from lore.ports.search import SearchIndexPort
    from lore.ports.sessions import LiveSession, SessionStore
    from lore.ports.tasks import TaskStore

__all__ = ["Runtime", "build"]

P = ParamSpec("P")
T = TypeVar("T")

# Room kept free in the context window beyond the reply: framing, estimate slack.
_MARGIN_TOKENS = 512


def build(
    config: Config,
    *,
    provider: Provider | None = None,
    clock: Clock | None = None,
    backend: Backend | None = None,
    embedder: Embedder | None = None,
) -> Runtime:
    """The runtime for `config` and every feature, on `backend`: by default PostgreSQL
    when `database_url` names one, else SQLite and files under the home. `embedder`
    embeds for search (default: the model Lore ships with)."""
    return Runtime(config, provider=provider, clock=clock, backend=backend, embedder=embedder)


class Runtime:
    def __init__(
        self,
        config: Config,
        *,
        provider: Provider | None = None,
        clock: Clock | None = None,
        backend: Backend | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self._provider = provider
        self._named_providers: dict[str, Provider] = {}
        self._backend = backend
        self._embedder = embedder

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

    # -- the backend: chosen once, its stores handed out ---------------------------------

    @cached_property
    def backend(self) -> Backend:
        """The storage: as given to `build`, else PostgreSQL when `database_url` names
        it (memories, reminders, outbox, index, sessions, the history log), else SQLite
        and files under the home. The workspace's files stay files either way."""
        if self._backend is not None:
            return self._backend
        if self.config.database_url:
            try:
                from lore.backends.postgres.backend import PostgresBackend
            except ImportError as exc:
                from lore.errors import ConfigError
                from lore.extras import install_hint

                raise ConfigError(
                    f"database_url names PostgreSQL, which needs {exc.name}: "
                    f"{install_hint('postgres')}"
                ) from None
            return PostgresBackend(self.config.database_url, embedder=self._embedder)
        from lore.backends.local.backend import LocalBackend

        return LocalBackend(self.config, embedder=self._embedder)

    @property
    def postgres(self) -> PostgresBackend | None:
        """The PostgreSQL backend, when that is the one (benchmarks reach its database)."""
        if self._backend is None and not self.config.database_url:
            return None
        from lore.backends.postgres.backend import PostgresBackend

        return self.backend if isinstance(self.backend, PostgresBackend) else None

    def database_state(self) -> DatabaseState:
        """The storage as last seen, without opening it or waiting on it (`/health`)."""
        if "backend" in self.__dict__:
            return self.backend.state()
        from lore.ports.backend import DatabaseState

        where = redact_url(self.config.database_url) if self.config.database_url else "lore.db"
        return DatabaseState("not opened", where)

    @cached_property
    def db(self) -> Database:
        """`lore.db`: the local backend's database (the one file doctor and backup read)."""
        from lore.backends.local.backend import LocalBackend

        if isinstance(self.backend, LocalBackend):
            return self.backend.db
        from lore.backends.local.database import Database

        return Database(self.config.db_path)

    @cached_property
    def lease_holder(self) -> LeaseHolder:
        """This process as the holder of leases: what it leaves when it ends is taken
        over at once by the next process of this home."""
        from lore.lease_holder import LeaseHolder

        return LeaseHolder(self.config.home / ".holders")

    def close(self) -> None:
        """Close what was opened (commands that never start the event loop)."""
        if "lease_holder" in self.__dict__:
            self.lease_holder.close()
        if "db" in self.__dict__:
            self.db.close()
        if "backend" in self.__dict__:
            self.backend.close()

    @property
    def memory(self) -> MemoryStore:
        return self.backend.memory

    @property
    def outbox(self) -> Outbox:
        return self.backend.outbox

    @property
    def reminders(self) -> ReminderStore:
        return self.backend.reminders

    @property
    def tasks(self) -> TaskStore:
        return self.backend.tasks

    @property
    def chat_ledger(self) -> ChatLedger:
        """What LINE and Telegram must still know after a restart (received updates,
        the ids of messages Lore sent)."""
        return self.backend.chat_ledger

    @property
    def search_index(self) -> SearchIndexPort:
        return self.backend.search_index

    @property
    def sessions(self) -> SessionStore:
        return self.backend.sessions

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
    def backups(self) -> Backups:
        """The backups `lore serve` writes on its own (files, whatever the backend)."""
        from lore.backends.local.scheduled_backups import ScheduledBackups

        return ScheduledBackups(self.config)

    @property
    def history(self) -> HistoryLog:
        return self.backend.history

    def session(self, key: str) -> LiveSession:
        return self.sessions.live(key)

    async def off_loop(self, call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        # A PostgreSQL call is 0.3-1.3 ms on loopback (more under load, more over a
        # network), a hop to a thread about 0.08 ms; SQLite's are mostly below the hop.
        if not self.backend.remote:
            return call(*args, **kwargs)
        import asyncio

        running = asyncio.ensure_future(asyncio.to_thread(call, *args, **kwargs))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            # The thread goes on whatever happens here: wait for it, so that what the
            # caller does on cancellation (mark a turn cancelled) comes after the call.
            await asyncio.wait([running])
            failed = running.exception()
            if failed is not None:
                raise failed from None
            raise

    # -- one worker at a time: single-writer jobs -----------------------------------------

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        return self.backend.exclusive(job, path)

    # -- features -------------------------------------------------------------------------

    @cached_property
    def features(self) -> list[Feature]:
        """Every feature, in the order its tools appear to the model and in /help."""
        from lore.core.builtin_commands import core_feature
        from lore.memory.feature import memory_feature
        from lore.reminders.feature import reminders_feature
        from lore.search.feature import search_feature
        from lore.sessions.feature import sessions_feature
        from lore.tasks.feature import tasks_feature
        from lore.tools.feature import tools_feature
        from lore.tools.web_feature import web_feature

        features = [
            core_feature(self),
            memory_feature(self),
            reminders_feature(self),
            tasks_feature(self),
            sessions_feature(self),
            search_feature(self),
            tools_feature(self),
            web_feature(self),
        ]
        if self.config.mcp.servers:  # the MCP SDK (~0.7 s to import) only where it serves
            from lore.tools.mcp_feature import mcp_feature

            features.append(mcp_feature(self))
        return features

    @cached_property
    def tools(self) -> ToolRegistry:
        from lore.core.tools import ToolRegistry

        registry = ToolRegistry()
        for feature in self.features:
            for tool in feature.tools:
                registry.add(tool, owner_only=feature.owner_only)
            for source in feature.tool_sources:
                registry.add_source(source)
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
        for feature in self.__dict__.get("features", []):  # only those built
            for stop in feature.on_close:
                await stop()
        for provider in [self._provider, *self._named_providers.values()]:
            if provider is not None:
                await provider.aclose()
        self.close()
