"""Scheduled tasks over REST: add with a phrase, list, cancel, per client and scope."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway

CLIENTS_TOML = """
[api.clients.family]
token = "family-token"
scopes = ["line:group:family"]
"""
FAMILY = "line:group:family"


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CLIENTS_TOML, encoding="utf-8")
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def test_a_client_schedules_lists_and_cancels_a_task_in_its_scope(gateway: Gateway) -> None:
    with gateway.client("family-token") as http:
        made = http.post(
            "/api/tasks",
            params={"scope": FAMILY},
            json={"prompt": "每天早上总结家里的提醒", "recurrence": "daily 08:00", "max_rounds": 2},
        )
        assert made.status_code == 201, made.text
        task = made.json()
        assert (task["trust"], task["max_rounds"], task["channel"]) == ("member", 2, "api")
        assert task["description"].startswith("#1 Tue 2026-12-01 08:00 (Asia/Taipei)")
        listed = http.get("/api/tasks", params={"scope": FAMILY}).json()["tasks"]
        assert [t["id"] for t in listed] == [1]
        assert http.get("/api/tasks", params={"scope": "cli:default"}).status_code == 403
        assert http.delete("/api/tasks/1", params={"scope": FAMILY}).json()["status"] == "cancelled"
        assert http.get("/api/tasks", params={"scope": FAMILY}).json() == {"tasks": []}


def test_bad_input_is_one_clear_error_and_nothing_is_stored(gateway: Gateway) -> None:
    with gateway.client() as http:
        bad = http.post("/api/tasks", json={"prompt": "x", "when": "когда-нибудь"})
        assert bad.status_code == 400
        assert "could not understand the time" in bad.json()["error"]["message"]
        gone = http.delete("/api/tasks/9", params={"scope": "cli:default"})
        assert gone.status_code == 404
        assert http.get("/api/tasks", params={"scope": "cli:default"}).json() == {"tasks": []}


def test_the_web_page_shows_a_conversations_tasks_beside_its_reminders(gateway: Gateway) -> None:
    with gateway.client() as http:
        made = http.post(
            "/api/tasks",
            params={"scope": "cli:default"},
            json={"prompt": "проверь погоду", "when": "tomorrow 8am"},
        )
        assert made.status_code == 201, made.text
    with gateway.page() as browser:
        page = browser.get("/", params={"scope": "cli:default"})
    assert page.status_code == 200
    assert "Scheduled tasks" in page.text
    assert "#1 Tue 2026-12-01 08:00 (Asia/Taipei), in 15 h — проверь погоду" in page.text
