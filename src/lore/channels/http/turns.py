"""The one place the HTTP channel hands a message to Lore and gets events back.

Each message goes to the bus as an `Inbound` from channel "api": turns in one scope run
one at a time, in arrival order (two clients writing into one conversation at once never
build their windows from the same history); different scopes run concurrently. The
owner's token speaks as the owner; any other client's as a guest, who is never offered
owner-only tools. Every outcome, a failure included, comes back as an event.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lore.errors import DatabaseUnavailable, LoreError
from lore.events import Emit, Inbound, ReplyFailed, Trust

if TYPE_CHECKING:
    from lore.core.approval import Approver
    from lore.runtime import Runtime

__all__ = ["Turns"]

log = logging.getLogger(__name__)

CHANNEL = "api"


class Turns:
    def __init__(self, lore: Runtime) -> None:
        self._lore = lore

    async def send(
        self,
        scope: str,
        author: str,
        text: str,
        emit: Emit,
        *,
        trust: Trust = "owner",
        approver: Approver | None = None,
        project: Path | None = None,
    ) -> None:
        """Run `text` as a turn (or a slash command) in `scope`; its events go to `emit`.
        A tool that asks first asks `approver` (None: it is refused); `project` is the
        folder the tools work in (already checked against the allowed ones)."""
        inbound = Inbound(scope, CHANNEL, author, text, trust, project=project)
        try:
            await self._lore.bus.send(inbound, emit, approver)
        except DatabaseUnavailable as exc:
            emit(ReplyFailed(str(exc), retry_after=exc.retry_after))
        except LoreError as exc:
            emit(ReplyFailed(str(exc)))
        except Exception:  # a bug must not take the server down, nor leak a trace
            log.exception("turn in %s failed", scope)
            emit(ReplyFailed("Lore failed to answer; the server log has the details"))
