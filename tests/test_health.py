"""`GET /health`: up without a token, and what each part of `lore serve` last reported (the
chat channels, the last reminder's lateness, the embedding backlog), read from memory:
answering never touches the database, which may be the part that is down."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.health import HEALTH, Health
from lore.llm.scripted import ScriptedProvider
from lore.ports.outbox import OutboxItem, ReminderPayload
from lore.reminders.delivery import Delivery
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def test_health_answers_without_a_token_with_each_parts_state(gateway: Gateway) -> None:
    HEALTH.channel("telegram", "connected (long polling)")
    HEALTH.backlog(12)
    with gateway.client(token="") as http:
        answer = http.get("/health").json()
    assert answer["status"] == "ok" and answer["backend"] == "sqlite"
    assert answer["database"]["state"] in {"ok", "not opened"}
    assert answer["database"]["where"].endswith("lore.db")
    assert answer["channels"]["telegram"] == "connected (long polling)"
    assert answer["embedding_backlog"] == 12
    assert set(answer["reminders"]) == {"last_lateness_seconds", "last_delivered_at"}


def test_health_never_reads_the_database(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    from lore.backends.local.database import Database

    def down(*args: object, **kwargs: object) -> None:
        raise AssertionError("/health read the database")

    monkeypatch.setattr(Database, "atomic", down)
    monkeypatch.setattr(type(gateway.lore.search_index), "pending_vectors", down)
    with gateway.client(token="") as http:
        assert http.get("/health").status_code == 200


async def test_a_delivered_reminder_reports_how_late_it_was(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    from lore.daemon import Daemon

    lore = build(config, provider=model, clock=clock)
    due = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    payload = ReminderPayload(1, "позвонить маме / 给妈妈打电话", "john", due)
    item = OutboxItem(
        1, "reminder:1:1", "cli:default", "cli", "reminder", payload, "pending", 0, due
    )
    daemon = Daemon(lore)
    try:
        await daemon._deliver(Delivery(item, due + timedelta(seconds=42)))
    finally:
        await lore.aclose()
    assert HEALTH.to_dict()["reminders"]["last_lateness_seconds"] == 42.0


def test_a_report_replaces_the_last_one() -> None:
    health = Health()
    health.channel("line", "webhook at /line/webhook")
    health.channel("line", "retrying: 503")
    health.delivered(-3.0)  # early is on time
    assert health.to_dict()["channels"] == {"line": "retrying: 503"}
    assert health.to_dict()["reminders"]["last_lateness_seconds"] == 0.0


def test_a_database_that_went_away_is_reported_with_since_and_why() -> None:
    """The PostgreSQL backend's state is what its database last saw; SQLite's is its file
    (`not opened` until a store is asked for)."""
    from lore.backends.fake.backend import FakeBackend
    from lore.ports.backend import DatabaseState

    assert FakeBackend().state() == DatabaseState("ok", "memory")
    state = DatabaseState("unreachable", "postgresql://lore:***@db/lore", 5.0, "refused")
    assert state.to_dict() == {
        "state": "unreachable",
        "where": "postgresql://lore:***@db/lore",
        "since": 5.0,
        "reason": "refused",
    }


def test_sqlite_is_not_opened_until_a_store_is_asked_for(config: Config) -> None:
    lore = build(config)
    try:
        assert lore.database_state().state == "not opened"
        assert lore.memory.scopes() == []  # opens lore.db
        assert lore.database_state().state == "ok"
    finally:
        lore.close()
