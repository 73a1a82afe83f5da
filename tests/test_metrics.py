"""`GET /metrics`: the gateway's figures in Prometheus' text format, for the owner's token
only: turns by channel and outcome with their latency, tool calls by tool and outcome,
searches with their latency, reminders delivered, chat platform errors, the embedding
backlog. The counters are the process's, so each test reads what its own work added."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.metrics import DECLARED, METRICS, Metrics
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[api.clients.family]\ntoken = "family-token"\nscopes = ["api:family"]\n',
        encoding="utf-8",
    )
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _scrape(gateway: Gateway) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with gateway.client() as http:
        answer = http.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def _chat(gateway: Gateway, text: str) -> None:
    with gateway.client() as http:
        answer = http.post(
            "/v1/chat/completions",
            json={"model": "lore", "messages": [{"role": "user", "content": text}]},
        )
    assert answer.status_code == 200, answer.text


def test_a_turn_with_a_tool_call_is_counted_with_its_latency(
    gateway: Gateway, model: ScriptedProvider
) -> None:
    before = _scrape(gateway)
    model.tool_call("remember", {"content": "Анна любит джаз"})
    model.reply("Noted.")
    _chat(gateway, "запомни: Анна любит джаз")
    model.tool_call("no_such_tool", {})
    model.reply("Sorry.")
    _chat(gateway, "用一个不存在的工具")
    after = _scrape(gateway)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew("lore_turns_total", channel="api", outcome="ok") == 2
    assert grew("lore_turn_seconds_count") == 2
    assert grew("lore_turn_seconds_bucket", le="+Inf") == 2
    assert grew("lore_tool_calls_total", tool="remember", outcome="ok") == 1
    assert grew("lore_tool_calls_total", tool="(unknown)", outcome="error") == 1
    assert ("lore_embedding_backlog", ()) in after
    assert after[("lore_outbox_pending", ())] == 0
    assert after[("lore_database_up", ())] == 1


def test_a_search_over_rest_is_counted_with_its_latency(gateway: Gateway) -> None:
    before = _scrape(gateway)
    with gateway.client() as http:
        assert http.get("/api/search", params={"q": "jazz", "scope": "api:default"}).is_success
    after = _scrape(gateway)
    key = ("lore_search_seconds_count", (("mode", "hybrid"),))
    assert after[key] - before.get(key, 0.0) == 1


def test_the_figures_need_the_owners_token(gateway: Gateway) -> None:
    with gateway.client(token="") as http:
        assert http.get("/metrics").status_code == 401
    with gateway.client(token="family-token") as http:
        assert http.get("/metrics").status_code == 403


def test_every_declared_metric_is_written_even_before_it_counts(gateway: Gateway) -> None:
    with gateway.client() as http:
        text = http.get("/metrics").text
    for name in DECLARED:
        assert f"# HELP {name}" in text


def test_a_metric_that_was_never_declared_is_refused() -> None:
    figures = Metrics()
    with pytest.raises(KeyError, match="not a declared counter"):
        figures.count("lore_made_up")
    with pytest.raises(KeyError, match="not a declared histogram"):
        figures.observe("lore_turns", 1.0)


def test_a_histogram_counts_each_observation_in_its_bucket() -> None:
    figures = Metrics()
    for seconds in (0.001, 0.02, 0.02, 200.0):
        figures.observe("lore_search_seconds", seconds, mode="text")
    [(key, seen)] = figures.histograms().items()
    assert key == ("lore_search_seconds", (("mode", "text"),))
    cumulative = dict(seen.cumulative())
    assert cumulative["0.005"] == 1 and cumulative["0.025"] == 3 and cumulative["120.0"] == 3
    assert cumulative["+Inf"] == 4 and seen.total == pytest.approx(200.041)
    assert METRICS is not figures
