"""Isolation, as a property: random operations in several scopes never let one scope's
memories reach another scope's block, search, listing or export.

The scopes share a small vocabulary on purpose, so the same words (even the same texts)
live in several scopes at once and a leak would be found by search.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.errors import InvalidInputError, NotFoundError
from lore.memory.block import render_memory_block
from lore.ports.memories import KINDS

SCOPES = ("cli:default", "telegram:42", "line:group:family")
WORDS = (
    "coffee",
    "tea",
    "Hualien",
    "mom",
    "flight",
    "咖啡",
    "美式咖啡",
    "开会",
    "提神",
    "кофе",
    "Москва",
    "コーヒー",
    "커피",
)
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ZONE = ZoneInfo("Asia/Taipei")

scopes = st.sampled_from(SCOPES)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


class ScopeIsolation(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.db = Database(":memory:")
        self.store = SQLiteMemoryStore(self.db)
        self.now = START
        self.owner: dict[int, str] = {}  # every id ever created -> its scope
        self.active: dict[int, str] = {}  # active id -> its text

    def teardown(self) -> None:
        self.db.close()

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
            scope, text, kind=kind, keywords=keywords, author="someone", via="tool", now=self.tick()
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
        if self.owner[memory_id] == scope and memory_id in self.active:
            self.store.forget(scope, memory_id, by="someone", via="tool", now=self.tick())
            del self.active[memory_id]
        else:
            try:
                self.store.forget(scope, memory_id, by="someone", via="tool", now=self.tick())
            except (NotFoundError, InvalidInputError):
                pass
            else:
                raise AssertionError(f"{scope} forgot #{memory_id} of {self.owner[memory_id]}")

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
    def blocks_listings_and_exports_hold_only_their_own_scope(self) -> None:
        for scope in SCOPES:
            mine = {i for i, s in self.owner.items() if s == scope and i in self.active}
            listed = {m.id for m in self.store.active(scope, now=self.now)}
            assert listed == mine
            exported = {json.loads(line)["id"] for line in self.store.export(scope)}
            assert exported == mine
            block = render_memory_block(
                self.store, scope, budget_chars=400, now=self.now, zone=ZONE
            )
            on_lines = {int(n) for n in re.findall(r"^#(\d+) ", block.text, re.MULTILINE)}
            assert on_lines == set(block.shown_ids) and on_lines <= mine
            for line in block.text.splitlines():
                match = re.match(r"#(\d+) \[\w+\] (.*) \(noted by", line)
                if match:
                    assert match.group(2) == self.active[int(match.group(1))]


ScopeIsolation.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_no_scope_ever_sees_another_scopes_memories = ScopeIsolation.TestCase
