"""`GET /api/memories` without a limit lists every memory, on SQLite and on PostgreSQL
(PostgreSQL refused the "no limit" the route used to send as -1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway
from tests.postgres_server import storage  # noqa: F401  (on both backends)


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.backend.close()


def test_listing_without_a_limit_gives_every_memory(gateway: Gateway) -> None:
    facts = ["Анна любит джаз", "安娜住在台北", "Anna walks the dog"]
    with gateway.client() as http:
        for fact in facts:
            assert http.post("/api/memories", json={"content": fact}).status_code == 201
        listed = http.get("/api/memories")
        limited = http.get("/api/memories", params={"limit": 1})
    assert listed.status_code == 200, listed.text
    assert sorted(m["content"] for m in listed.json()["memories"]) == sorted(facts)
    assert len(limited.json()["memories"]) == 1
