"""What a program may do with one conversation's memories, reminders and sessions.

The REST API, the web page and the MCP tools all come through here, so they agree on
every rule: the scope is checked first (another scope's id is simply not found), writes
are noted by the caller with `via="api"`, and answers are plain JSON-ready records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lore.errors import InvalidInputError, NotFoundError, SessionError, quoted

if TYPE_CHECKING:
    from lore.channels.http.auth import Client
    from lore.memory.intake import Said
    from lore.messages import Message
    from lore.ports.memories import AuditEntry
    from lore.ports.sessions import ArchivedSession, LiveSession, SessionArchive
    from lore.runtime import Runtime

__all__ = ["ScopeAccess", "known_scopes"]

_PAGE = 200  # most messages one transcript answer carries


@dataclass(frozen=True)
class ScopeAccess:
    lore: Runtime
    client: Client
    scope: str

    @classmethod
    def open(cls, lore: Runtime, client: Client, scope: str | None) -> ScopeAccess:
        """Access to `scope` (the client's default when None); Forbidden if not allowed."""
        return cls(lore, client, client.check(scope or client.default_scope))

    def noted_by(self, author: str | None) -> ScopeAccess:
        """This access writing as `author` (None: the client's own): only the owner's
        token may note for someone else."""
        from lore.channels.http.auth import Forbidden

        if author is None or author.strip() == self.client.author:
            return self
        if not author.strip():
            raise InvalidInputError("author cannot be empty")
        if not self.client.is_owner:
            raise Forbidden("only the owner's token may note memories for another author")
        return replace(self, client=replace(self.client, author=author.strip()))

    # -- memories -----------------------------------------------------------------------

    def memories(self, *, limit: int | None = None) -> dict[str, Any]:
        now = self.lore.clock.now()
        page = self.lore.memory.active_page(self.scope, now=now, limit=limit)
        return {
            "scope": self.scope,
            "total": page.total,
            "memories": [m.to_record() for m in page.memories],
        }

    def memory(self, memory_id: int) -> dict[str, Any]:
        return self.lore.memory.get(self.scope, memory_id).to_record()

    def remember(
        self,
        content: str,
        *,
        kind: str = "fact",
        keywords: list[str] | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[dict[str, Any], bool]:
        now = self.lore.clock.now()
        if expires_at is not None and expires_at <= now:
            raise InvalidInputError("expires_at is already past")
        memory, created = self.lore.memory.remember(
            self.scope,
            content,
            kind=kind,
            keywords=keywords or (),
            author=self.client.author,
            via="api",
            now=now,
            expires_at=expires_at,
        )
        return memory.to_record(), created

    def update(
        self,
        memory_id: int,
        content: str,
        *,
        kind: str | None = None,
        keywords: list[str] | None = None,
    ) -> dict[str, Any]:
        memory = self.lore.memory.supersede(
            self.scope,
            memory_id,
            content,
            kind=kind,
            keywords=keywords,
            author=self.client.author,
            via="api",
            now=self.lore.clock.now(),
        )
        return memory.to_record()

    def forget(self, memory_id: int) -> list[int]:
        from lore.core.forgetting import forget_memory

        return forget_memory(
            self.lore,
            self.scope,
            memory_id,
            by=self.client.author,
            via="api",
            now=self.lore.clock.now(),
        )

    async def add(self, said: Said) -> dict[str, Any]:
        """What was said, through extraction (or kept as one memory without a model)."""
        import asyncio

        from lore.memory.intake import add_said

        intake = await add_said(self.lore, self.scope, said, author=self.client.author, via="api")
        return await asyncio.to_thread(intake.record, self.lore.memory, self.scope)

    def forget_named(
        self, memory_id: int | None, phrase: str | None, *, everywhere: bool
    ) -> dict[str, Any]:
        """Forget by id or phrase; everywhere (which reaches every scope) for the owner."""
        from lore.channels.http.auth import Forbidden
        from lore.memory.intake import forget_named

        if everywhere and not self.client.is_owner:
            raise Forbidden("only the owner's token may erase text everywhere")
        return forget_named(
            self.lore,
            self.scope,
            memory_id,
            phrase=phrase,
            everywhere=everywhere,
            by=self.client.author,
            via="api",
        )

    def history(self, memory_id: int) -> list[dict[str, Any]]:
        return [_audit(entry) for entry in self.lore.memory.history(self.scope, memory_id)]

    def search_memories(self, query: str, *, limit: int = 10) -> list[dict[str, Any]]:
        found = self.lore.memory.search(self.scope, query, now=self.lore.clock.now(), limit=limit)
        return [m.to_record() for m in found]

    def search(
        self, query: str, *, limit: int = 10, when: str | None = None
    ) -> list[dict[str, Any]]:
        """The model's memory_search: memories, notes and archived sessions, hybrid;
        `when` ("last week", "上个月") keeps what was said then."""
        from lore.search import search_when

        hits = search_when(self.lore, query, self.scope, when=when, limit=limit)
        return [hit.to_dict(query) for hit in hits]

    def block(self) -> dict[str, Any]:
        """The memory block exactly as the model sees it in this scope's next turn."""
        from lore.memory.block import scope_block

        block = scope_block(self.lore, self.scope, now=self.lore.clock.now())
        return {"text": block.text, "shown": sorted(block.shown_ids), "hidden": block.hidden_count}

    def source_message(self, memory: dict[str, Any]) -> Message | None:
        """The message a memory was noted from, when its session still has it."""
        source = memory.get("source")
        if not source or source.get("message") is None:
            return None
        index = int(source["message"])
        live = self._live()
        if live is not None and live.meta.session_id == source["session"]:
            messages = live.messages
            return messages[index] if 0 <= index < len(messages) else None
        entry = self._archived(str(source["session"]), missing_ok=True)
        if entry is None:
            return None
        found, _ = self._archive().read_messages(entry, offset=index, limit=1)
        return found[0] if found else None

    def export(self) -> list[str]:
        return self.lore.memory.export(self.scope)

    def import_(self, lines: list[str]) -> dict[str, list[int]]:
        result = self.lore.memory.import_(
            self.scope, lines, by=self.client.author, via="api", now=self.lore.clock.now()
        )
        return {"added": result.added, "already_present": result.already_present}

    # -- reminders ----------------------------------------------------------------------

    def reminders(self, *, include_done: bool = False) -> list[dict[str, Any]]:
        found = self.lore.reminders.list(self.scope, include_done=include_done)
        return [self._reminder(r) for r in found]

    def undelivered(self) -> list[dict[str, Any]]:
        """Occurrences that fell due but did not reach the chat: failed for good, or
        waiting for another try (what `lore remind list` marks with "!")."""
        from lore.reminders.delivery import due_summary

        rows: list[dict[str, Any]] = []
        for item in self.lore.outbox.items(self.scope, limit=50):
            if item.status == "failed" or (item.status == "pending" and item.attempts):
                reminder_id, text, due_at = due_summary(item)
                rows.append(
                    {
                        "reminder_id": reminder_id,
                        "text": text,
                        "due_at": due_at,
                        "status": "failed" if item.status == "failed" else "retrying",
                        "attempts": item.attempts,
                        "error": item.last_error,
                    }
                )
        return rows

    def remind(self, text: str, when: str | None, recurrence: str | None = None) -> dict[str, Any]:
        from lore.reminders import create_reminder

        if not text.strip():
            raise InvalidInputError("a reminder needs text")
        reminder = create_reminder(
            self.lore.reminders,
            scope=self.scope,
            author=self.client.author,
            text=text.strip(),
            when=when,
            recurrence=recurrence or None,
            now=self.lore.clock.now(),
            zone=self.lore.zone,
            channel="api",
        )
        return self._reminder(reminder)

    def cancel_reminder(self, reminder_id: int) -> dict[str, Any]:
        reminder = self.lore.reminders.cancel(
            self.scope, reminder_id, by=self.client.author, now=self.lore.clock.now()
        )
        return self._reminder(reminder)

    def _reminder(self, reminder: Any) -> dict[str, Any]:
        from lore.reminders import describe_reminder

        now = self.lore.clock.now()
        return {**reminder.to_dict(), "description": describe_reminder(reminder, now)}

    def tasks(self) -> list[str]:
        """The scope's pending scheduled tasks, one line each, with how each last ran."""
        from lore.tasks import describe_task

        now = self.lore.clock.now()
        return [describe_task(task, now) for task in self.lore.tasks.list(self.scope)]

    # -- sessions -----------------------------------------------------------------------

    def sessions(self) -> dict[str, Any]:
        """The live session and this scope's closed ones, newest first."""
        live = self._live()
        archived = [e for e in self._archive().entries() if e.key == self.scope]
        archived.sort(key=lambda e: e.ended_at, reverse=True)
        return {
            "scope": self.scope,
            "live": None
            if live is None
            else {
                "session_id": live.meta.session_id,
                "created_at": live.meta.created_at,
                "updated_at": live.meta.updated_at,
                "message_count": len(live.messages),
            },
            "archived": [self._with_origin(e) for e in archived],
        }

    def _with_origin(self, entry: ArchivedSession) -> dict[str, Any]:
        """A closed session's record; one brought by `lore import` with its title and the
        assistant it came from (read from its metadata, only for those)."""
        from lore.sessions.importing import REASON, session_source

        record = entry.to_dict()
        if entry.reason == REASON:
            record["title"], record["source"] = session_source(self._archive().metadata(entry))
        return record

    def transcript(self, session_id: str, *, offset: int = 0, limit: int = _PAGE) -> dict[str, Any]:
        """One session's exact messages: the live one, or a closed one of this scope."""
        if offset < 0 or not 1 <= limit <= 1000:
            raise InvalidInputError("offset must be 0 or more and limit between 1 and 1000")
        live = self._live()
        if live is not None and session_id in ("live", live.meta.session_id):
            messages = live.messages
            return {
                "session": {"session_id": live.meta.session_id, "key": self.scope, "live": True},
                "offset": offset,
                "total": len(messages),
                "messages": messages[offset : offset + limit],
            }
        entry = self._archived(session_id)
        assert entry is not None
        messages, total = self._archive().read_messages(entry, offset=offset, limit=limit)
        return {
            "session": {**entry.to_dict(), "live": False},
            "offset": offset,
            "total": total,
            "messages": messages,
        }

    def why(self, session_id: str, index: int) -> dict[str, Any]:
        """What reply `index` of one of this scope's sessions rested on (memories looked
        up as they are now); NotFound for a message that is not a reply."""
        from lore.sessions.why import explain, reply_at

        page = self.transcript(session_id, offset=max(index, 0), limit=1)
        message = reply_at(page["messages"], index, offset=page["offset"])
        explained = explain(self.lore.memory, self.scope, index, message, self.lore.zone)
        return {"session_id": page["session"]["session_id"], **explained}

    def summary(self, session_id: str) -> dict[str, Any]:
        """A closed session's summary (or raw digest) with the way back to its transcript."""
        entry = self._archived(session_id)
        assert entry is not None
        text = None
        if entry.memory_path:
            try:
                text = (self.lore.config.home / entry.memory_path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = None
        return {
            "session_id": entry.session_id,
            "status": entry.summary,
            "path": entry.memory_path,
            "text": text,
            "transcript": f"/api/sessions/{entry.session_id}?scope={self.scope}",
        }

    def _live(self) -> LiveSession | None:
        """The live session, if this scope has one (reading must not create it)."""
        if self.lore.sessions.live_meta(self.scope) is None:
            return None
        return self.lore.session(self.scope)

    def _archive(self) -> SessionArchive:
        return self.lore.sessions.archive

    def _archived(self, session_id: str, *, missing_ok: bool = False) -> ArchivedSession | None:
        entry = self._archive().get(session_id.strip().lower())
        if entry is None or entry.key != self.scope:
            if missing_ok:
                return None
            raise NotFoundError(f"there is no session {quoted(session_id)} in this conversation")
        return entry


def known_scopes(lore: Runtime, client: Client) -> list[str]:
    """Conversations this client may open that have a live or closed session."""
    found = {client.default_scope, *lore.sessions.live_keys()}
    try:
        found.update(entry.key for entry in lore.sessions.archive.entries())
    except SessionError:
        pass
    return sorted(scope for scope in found if client.may(scope))


def known_conversations(lore: Runtime, client: Client) -> list[dict[str, Any]]:
    """The conversations this client may open (those with a session, and those a chat
    channel named), each with its name and the time of its last message (None when
    unknown)."""
    from lore.channels.names import last_message_times
    from lore.errors import LoreError

    try:
        names = lore.chat_ledger.conversation_names()
    except LoreError:  # the names are a courtesy: the list stands without them
        names = {}
    scopes = sorted(
        set(known_scopes(lore, client)) | {scope for scope in names if client.may(scope)}
    )
    times = last_message_times(lore, scopes)
    return [
        {
            "scope": scope,
            "name": names[scope].name if scope in names else None,
            "last_message_at": times.get(scope),
        }
        for scope in scopes
    ]


def _audit(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "memory_id": entry.memory_id,
        "action": entry.action,
        "actor": entry.actor,
        "via": entry.via,
        "at": entry.at.isoformat(),
        "detail": entry.detail,
    }
