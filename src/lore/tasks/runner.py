"""The task runner: claims due tasks, runs each occurrence's turn, queues the reply.

Three steps, each safe to be killed after. A claim queues the occurrence as a run in the
task's own transaction. A lease takes one run; its turn runs in the task's conversation
with the task's trust and budget (tool rounds; seconds, after which the turn is
stopped), its user message carrying the run's key as its message id. Finishing the run
and queueing the reply (or why it failed) in the outbox are one transaction; from there
the reminder scheduler delivers it once, under the same key. A process killed mid-turn
leaves the run leased: the next process takes it over at once (`LeaseHolder`), and a
turn already answered in the session is not run again, its reply is sent.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from lore.errors import DatabaseUnavailable, LoreError
from lore.events import Inbound
from lore.ports.tasks import MAX_SECONDS, TaskRun, run_item

if TYPE_CHECKING:
    from lore.clock import Clock
    from lore.lease_holder import LeaseHolder
    from lore.llm.base import Message
    from lore.ports.sessions import SessionStore
    from lore.ports.tasks import TaskStore

__all__ = ["RunTurn", "TaskRunner", "TurnReply", "task_inbound"]

log = logging.getLogger(__name__)

_LEASE_SECONDS = MAX_SECONDS + 60.0  # outlives the longest turn a task may run


@dataclass(frozen=True)
class TurnReply:
    """What one turn gave: its reply, or why there is none."""

    text: str = ""
    failure: str = ""


# Runs one turn as the bus does (its queue, its session), returning the reply.
RunTurn = Callable[[Inbound], Awaitable[TurnReply]]


def task_inbound(run: TaskRun) -> Inbound:
    """The message a run's turn answers: the task's prompt, said by whoever set it, with
    their trust, in the channel it was set on, under the run's key."""
    task = run.task
    return Inbound(
        scope=task.scope,
        channel=task.channel or "cli",
        author=task.author,
        text=f"(scheduled task #{task.id}) {task.prompt}",
        trust=task.trust,
        message_id=run.key,
        max_tool_rounds=task.max_rounds,
    )


class TaskRunner:
    def __init__(
        self,
        store: TaskStore,
        sessions: SessionStore,
        clock: Clock,
        turn: RunTurn,
        *,
        queued: Callable[[], None] = lambda: None,
        holder: LeaseHolder | None = None,
        owner: str | None = None,
        max_sleep: float = 60.0,
        batch: int = 100,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.clock = clock
        self.turn = turn
        self.queued = queued  # a reply entered the outbox: the scheduler delivers it now
        self.holder = holder
        self.owner = owner or (holder.name if holder else f"{os.getpid()}:{id(self):x}")
        self.max_sleep = max_sleep
        self.batch = batch
        self._stopping = False

    async def run_once(self, now: datetime | None = None) -> list[TaskRun]:
        """Claim what is due at `now` (default: the clock) and run every waiting run;
        returns the runs that finished (done or failed) here."""
        now = now or self.clock.now()
        while len(self.store.claim_due(now, self.batch)) == self.batch:
            pass
        if self.holder is not None and (gone := self.holder.gone()):
            if taken := self.store.end_leases(gone):
                log.info("taking over %d task run(s) a stopped process left", taken)
        finished: list[TaskRun] = []
        while not self._stopping:
            leased = self.store.lease_runs(
                owner=self.owner, now=now, seconds=_LEASE_SECONDS, limit=1
            )
            if not leased:
                return finished
            if await self._run(leased[0]):
                finished.append(leased[0])
        return finished

    async def _run(self, run: TaskRun) -> bool:
        task = run.task
        failure = ""
        reply = _answered(self.sessions.live(task.scope).messages, run.key)
        try:
            if reply is None:
                got = await asyncio.wait_for(self.turn(task_inbound(run)), task.max_seconds)
                reply, failure = got.text, got.failure
        except asyncio.CancelledError:
            self.store.release_run(run.id, owner=self.owner)  # stopped: the next run has it
            raise
        except TimeoutError:
            failure = f"it ran past its budget of {task.max_seconds} s and was stopped"
        except LoreError as exc:
            failure = str(exc)
        except Exception as exc:  # one task's failure never stops the others
            log.exception("task #%d in %s failed", task.id, task.scope)
            failure = f"{type(exc).__name__}: {exc}"
        now = self.clock.now()
        if failure or not reply:
            failure = failure or "the model gave no reply"
            text = f"Scheduled task #{task.id} could not run: {failure}"
            item = run_item(run, text, kind="task_failed", now=now)
            log.warning("task #%d in %s failed: %s", task.id, task.scope, failure)
            ended = self.store.fail_run(run.id, owner=self.owner, now=now, error=failure, item=item)
        else:
            item = run_item(run, reply, kind="task", now=now)
            ended = self.store.finish_run(run.id, owner=self.owner, now=now, item=item)
        if not ended:
            log.warning("task #%d: another process took its run over; its reply is theirs", task.id)
        self.queued()
        return ended

    def seconds_until_next(self, now: datetime) -> float:
        upcoming = self.store.next_time()
        if upcoming is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (upcoming - now).total_seconds() + 0.01))

    async def run_forever(self) -> None:
        """Run tasks until `stop()` or cancellation."""
        self._stopping = False
        while not self._stopping:
            try:
                await self.run_once()
                delay = self.seconds_until_next(self.clock.now())
            except DatabaseUnavailable as exc:
                log.warning("the task runner waits for the database: %s", exc)
                delay = self.max_sleep
            except Exception:  # the database, or a bug: logged, and the loop goes on
                log.exception("the task runner could not read the database; retrying")
                delay = self.max_sleep
            await asyncio.sleep(delay)

    def stop(self) -> None:
        self._stopping = True


def _answered(messages: Sequence[Message], key: str) -> str | None:
    """The reply a turn under `key` already got (a process killed after the turn, before
    the run was finished), so it is sent rather than asked again; None when none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and message.get("message_id") == key:
            for later in messages[index + 1 :]:
                if later.get("role") == "user":
                    return None
                content = later.get("content")
                if later.get("role") == "assistant" and content and not later.get("tool_calls"):
                    return None if later.get("interrupted") else str(content)
            return None
    return None
