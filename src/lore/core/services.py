"""What features may ask of the runtime: the stores behind their ports, the model, time.

`lore.runtime.Runtime` is the one implementation; features and the core only ever see
this Protocol, so they never import the composition root, a backend or a channel. What
the features themselves add (their hooks, commands) is `lore.core.feature.Assembled`:
this Protocol names nothing above the ports, so the modules that take it never import
one another back.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import tzinfo
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    from pathlib import Path

    from lore.clock import Clock
    from lore.config import Config
    from lore.core.background import Background
    from lore.core.confirmation import Confirmations
    from lore.core.tools import ToolRegistry
    from lore.llm.base import Provider
    from lore.llm.tokens import TokenCounter
    from lore.ports.backend import Backend
    from lore.ports.backups import Backups
    from lore.ports.chat_ledger import ChatLedger
    from lore.ports.memories import MemoryStore
    from lore.ports.notes import HistoryLog, NotesStore, Versions, Workspace
    from lore.ports.outbox import Outbox
    from lore.ports.reminders import ReminderStore
    from lore.ports.search import SearchIndexPort
    from lore.ports.sessions import LiveSession, SessionStore
    from lore.ports.tasks import TaskStore

__all__ = ["Services"]

P = ParamSpec("P")
T = TypeVar("T")


class Services(Protocol):
    config: Config
    clock: Clock

    @property
    def confirmations(self) -> Confirmations:
        """Questions waiting for the yes of the person who asked (see core.confirmation)."""
        ...

    @property
    def zone(self) -> tzinfo: ...

    @property
    def provider(self) -> Provider: ...

    def provider_for(self, model: str) -> Provider: ...

    @property
    def tokens(self) -> TokenCounter: ...

    @property
    def background(self) -> Background: ...

    @property
    def memory(self) -> MemoryStore: ...

    @property
    def backend(self) -> Backend: ...

    @property
    def reminders(self) -> ReminderStore: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def tasks(self) -> TaskStore: ...

    @property
    def chat_ledger(self) -> ChatLedger: ...

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def search_index(self) -> SearchIndexPort: ...

    @property
    def history(self) -> HistoryLog: ...

    @property
    def workspace(self) -> Workspace: ...

    def project_workspace(self, root: Path) -> Workspace:
        """A chosen project folder, read as a workspace (never outside it)."""
        ...

    @property
    def versions(self) -> Versions: ...

    @property
    def backups(self) -> Backups:
        """The backups Lore writes on its own, which forgetting reaches too."""
        ...

    @property
    def notes(self) -> NotesStore: ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def context_window(self) -> int: ...

    @property
    def reply_tokens(self) -> int: ...

    def history_budget(self, fixed_tokens: int) -> int: ...

    def session(self, key: str) -> LiveSession: ...

    async def off_loop(self, call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`call(*args, **kwargs)` from async code, for a call that waits on the stores:
        in a worker thread when the backend is remote (PostgreSQL), else right here. A
        caller cancelled meanwhile gets its CancelledError once the call has ended (the
        call's own error if it failed)."""
        ...

    def exclusive(self, job: str, path: Path | None) -> AbstractContextManager[bool]:
        """Run `job` (Dream, the idle closer, one conversation's consolidation) on one
        worker at a time: yields False at once when another holds it. On one host the
        lock file `path` (None: no lock needed there); on PostgreSQL an advisory lock."""
        ...
