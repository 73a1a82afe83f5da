"""Isolation as a property, for every backend: random writes in several scopes that share
their words never let one scope's memories reach another scope's list, search or export."""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from lore.errors import InvalidInputError, NotFoundError
from lore.ports.memories import KINDS
from tests.contract.conftest import FACTORIES, backend_params

SCOPES = ("cli:default", "telegram:42", "line:group:family")
WORDS = ("coffee", "tea", "Hualien", "mom", "咖啡", "美式咖啡", "开会", "кофе", "Москва", "커피")
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

scopes = st.sampled_from(SCOPES)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


def isolation_machine(backend_name: str) -> type[RuleBasedStateMachine]:
    class ScopeIsolation(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.resources = ExitStack()
            directory = self.resources.enter_context(tempfile.TemporaryDirectory())
            backend = self.resources.enter_context(FACTORIES[backend_name](Path(directory)))
            self.store = backend.memories
            self.now = START
            self.owner: dict[int, str] = {}  # every id ever created -> its scope
            self.active: dict[int, str] = {}  # active id -> its text

        def teardown(self) -> None:
            self.resources.close()

        def tick(self) -> datetime:
            self.now += timedelta(minutes=1)
            return self.now

        @rule(
            scope=scopes,
            text=texts,
            kind=st.sampled_from(KINDS),
            keywords=st.lists(st.sampled_from(WORDS), max_size=2),
        )
        def remember(self, scope: str, text: str, kind: str, keywords: list[str]) -> None:
            memory, created = self.store.remember(
                scope,
                text,
                kind=kind,
                keywords=keywords,
                author="someone",
                via="tool",
                now=self.tick(),
            )
            if created:
                self.owner[memory.id] = scope
                self.active[memory.id] = memory.content
            assert self.owner[memory.id] == scope

        @rule(scope=scopes, data=st.data())
        def forget_any_id(self, scope: str, data: st.DataObject) -> None:
            if not self.owner:
                return
            memory_id = data.draw(st.sampled_from(sorted(self.owner)))
            mine = self.owner[memory_id] == scope and memory_id in self.active
            try:
                self.store.forget(scope, memory_id, by="someone", via="tool", now=self.tick())
            except (NotFoundError, InvalidInputError):
                assert not mine
            else:
                assert mine, f"{scope} forgot #{memory_id} of {self.owner[memory_id]}"
                del self.active[memory_id]

        @rule(scope=scopes, text=texts, data=st.data())
        def supersede_any_id(self, scope: str, text: str, data: st.DataObject) -> None:
            if not self.active:
                return
            memory_id = data.draw(st.sampled_from(sorted(self.active)))
            try:
                new = self.store.supersede(
                    scope, memory_id, text, author="someone", via="tool", now=self.tick()
                )
            except (NotFoundError, InvalidInputError):
                assert self.owner[memory_id] != scope or text in self.active.values()
                return
            assert self.owner[memory_id] == scope
            del self.active[memory_id]
            self.owner[new.id] = scope
            self.active[new.id] = new.content

        @rule(scope=scopes, query=st.sampled_from(WORDS))
        def search_stays_in_scope(self, scope: str, query: str) -> None:
            for hit in self.store.search(scope, query, now=self.now, limit=100):
                assert self.owner[hit.id] == scope and hit.id in self.active

        @invariant()
        def lists_and_exports_hold_only_their_own_scope(self) -> None:
            for scope in SCOPES:
                mine = {i for i, s in self.owner.items() if s == scope and i in self.active}
                assert {m.id for m in self.store.active(scope, now=self.now)} == mine
                assert {json.loads(line)["id"] for line in self.store.export(scope)} == mine

    return ScopeIsolation


@pytest.mark.parametrize("name", backend_params())
def test_no_scope_ever_sees_another_scopes_memories(name: str) -> None:
    machine = isolation_machine(name)
    machine.TestCase.settings = settings(
        max_examples=40,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    machine.TestCase().runTest()
