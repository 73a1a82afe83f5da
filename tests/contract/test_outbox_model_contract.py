"""The outbox against a model, for every backend: random puts, leases by three owners,
done, release and retry while time moves on. Each answer must be the model's, so no item
is ever held by two owners at once, delivered twice, or lost."""

from __future__ import annotations

import math
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lore.ports.outbox import MAX_ATTEMPTS, OutboxItem, ReminderPayload
from tests.contract.conftest import FACTORIES, backend_params

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPES = ("cli:default", "line:group:family")
OWNERS = ("a", "b", "c")


@dataclass
class Expected:
    id: int
    scope: str
    status: str = "pending"
    attempts: int = 0
    available: int = 0
    owner: str | None = None
    until: float = 0.0

    def ready(self, now: datetime) -> bool:
        return (
            self.status == "pending"
            and self.available <= math.floor(now.timestamp())
            and self.until < now.timestamp()
        )


def outbox_machine(backend_name: str) -> type[RuleBasedStateMachine]:
    class OutboxModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.resources = ExitStack()
            directory = self.resources.enter_context(tempfile.TemporaryDirectory())
            self.outbox = self.resources.enter_context(
                FACTORIES[backend_name](Path(directory))
            ).outbox
            self.now = START
            self.keys: set[str] = set()
            self.items: dict[int, Expected] = {}

        def teardown(self) -> None:
            self.resources.close()

        @rule(seconds=st.sampled_from([0.4, 1, 7, 30, 59.5, 61, 120]))
        def time_passes(self, seconds: float) -> None:
            self.now += timedelta(seconds=seconds)

        @rule(
            key=st.sampled_from([f"reminder:{n}:1" for n in range(8)]),
            scope=st.sampled_from(SCOPES),
        )
        def put(self, key: str, scope: str) -> None:
            payload = ReminderPayload(1, "喝水", "john", self.now)
            item = OutboxItem(0, key, scope, "cli", "reminder", payload, "pending", 0, self.now)
            added = self.outbox.put(item, now=self.now)
            assert added == (key not in self.keys)
            if added:
                self.keys.add(key)
                [stored] = [i for i in self.outbox.items(scope) if i.key == key]
                self.items[stored.id] = Expected(
                    stored.id, scope, available=math.floor(self.now.timestamp())
                )

        @rule(
            owner=st.sampled_from(OWNERS),
            limit=st.integers(1, 4),
            seconds=st.sampled_from([5.0, 60.0]),
            scopes=st.sampled_from([None, SCOPES[:1], SCOPES[1:]]),
        )
        def lease(
            self, owner: str, limit: int, seconds: float, scopes: tuple[str, ...] | None
        ) -> None:
            leased = self.outbox.lease(
                owner=owner, now=self.now, scopes=scopes, limit=limit, seconds=seconds
            )
            expected = [
                e.id
                for e in sorted(self.items.values(), key=lambda e: e.id)
                if e.ready(self.now) and (scopes is None or e.scope in scopes)
            ][:limit]
            assert [i.id for i in leased] == expected
            for item_id in expected:
                self.items[item_id].owner = owner
                self.items[item_id].until = self.now.timestamp() + seconds

        @precondition(lambda self: bool(self.items))
        @rule(owner=st.sampled_from(OWNERS), data=st.data())
        def done(self, owner: str, data: st.DataObject) -> None:
            e = self.items[data.draw(st.sampled_from(sorted(self.items)))]
            holds = e.status == "pending" and e.owner == owner
            assert self.outbox.done(e.id, owner=owner, now=self.now) == holds
            if holds:
                e.status, e.owner, e.until = "delivered", None, 0.0

        @precondition(lambda self: bool(self.items))
        @rule(owner=st.sampled_from(OWNERS), data=st.data())
        def release(self, owner: str, data: st.DataObject) -> None:
            e = self.items[data.draw(st.sampled_from(sorted(self.items)))]
            self.outbox.release(e.id, owner=owner)
            if e.status == "pending" and e.owner == owner:
                e.owner, e.until = None, 0.0

        @precondition(lambda self: bool(self.items))
        @rule(owner=st.sampled_from(OWNERS), data=st.data(), delay=st.sampled_from([0, 3, 30]))
        def retry(self, owner: str, data: st.DataObject, delay: float) -> None:
            e = self.items[data.draw(st.sampled_from(sorted(self.items)))]
            self.outbox.retry(e.id, owner=owner, now=self.now, error="сбой", delay=delay)
            if e.status == "pending" and e.owner == owner:
                e.attempts += 1
                e.available = math.floor(self.now.timestamp()) + int(delay)
                e.owner, e.until = None, 0.0
                if e.attempts >= MAX_ATTEMPTS:
                    e.status = "failed"

        @invariant()
        def the_outbox_says_what_the_model_says(self) -> None:
            for scope in SCOPES:
                stored = {i.id: (i.status, i.attempts) for i in self.outbox.items(scope)}
                model = {
                    e.id: (e.status, e.attempts) for e in self.items.values() if e.scope == scope
                }
                assert stored == model
                waiting = [
                    max(float(e.available), e.until)
                    for e in self.items.values()
                    if e.scope == scope and e.status == "pending"
                ]
                soonest = self.outbox.next_ready(scope)
                expected = datetime.fromtimestamp(min(waiting), UTC) if waiting else None
                assert soonest == expected
            ready = {e.scope for e in self.items.values() if e.ready(self.now)}
            assert set(self.outbox.ready_scopes(self.now)) == ready

    return OutboxModel


@pytest.mark.parametrize("name", backend_params())
def test_the_outbox_behaves_as_its_model_under_any_interleaving(name: str) -> None:
    machine = outbox_machine(name)
    machine.TestCase.settings = settings(
        max_examples=25,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    machine.TestCase().runTest()
