"""The REST routes a program's client needs beyond the memory API's first ones: add what
was said (extraction or plain), forget by id or phrase (everywhere: the owner's token),
search by time, a memory noted for another author."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[api.clients.alice]\ntoken = "alice-token"\nscopes = ["api:alice"]\n', encoding="utf-8"
    )
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei"},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.close()


@pytest.fixture
def alice(gateway: Gateway) -> Iterator[httpx.Client]:
    with gateway.client("alice-token") as client:
        yield client


def test_add_extracts_from_messages_and_notes_by_the_token(
    alice: httpx.Client, model: ScriptedProvider
) -> None:
    model.reply(json.dumps([{"op": "add", "content": "Алиса любит джаз", "kind": "preference"}]))
    messages = [{"role": "user", "content": "Я люблю джаз"}, {"role": "assistant", "content": "!"}]
    reply = alice.post("/api/memories/add", json={"messages": messages})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["extracted"] and body["notices"][0].startswith("noted #")
    [memory] = body["memories"]
    assert (memory["content"], memory["author"], memory["source"]) == (
        "Алиса любит джаз",
        "alice",
        None,
    )


@pytest.mark.parametrize(
    "body",
    [{}, {"text": "a", "messages": []}, {"messages": [{"role": "robot", "content": "x"}]}],
)
def test_add_needs_text_or_messages(alice: httpx.Client, body: dict[str, object]) -> None:
    reply = alice.post("/api/memories/add", json=body)
    assert reply.status_code in (400, 422) and "message" in reply.json()["error"]


def test_forget_by_phrase_and_everywhere_only_for_the_owner(
    gateway: Gateway, alice: httpx.Client
) -> None:
    first = alice.post("/api/memories", json={"content": "爱丽丝住在台北"}).json()
    alice.post("/api/memories", json={"content": "爱丽丝的猫住在台北"})
    several = alice.post("/api/memories/forget", json={"phrase": "台北"})
    assert several.status_code == 400 and "matches 2 memories" in several.json()["error"]["message"]
    everywhere = alice.post("/api/memories/forget", json={"id": first["id"], "everywhere": True})
    assert everywhere.status_code == 403
    done = alice.post("/api/memories/forget", json={"phrase": "爱丽丝住在"})
    assert done.status_code == 200 and done.json() == {
        "id": first["id"],
        "erased": [first["id"]],
        "everywhere": [],
    }
    with gateway.client() as owner:
        kept = owner.post(
            "/api/memories?scope=api:alice", json={"content": "Alice's PIN hint is 'blue door'"}
        )
        memory_id = kept.json()["id"]
        erased = owner.post(
            "/api/memories/forget?scope=api:alice", json={"id": memory_id, "everywhere": True}
        )
    assert erased.status_code == 200 and erased.json()["everywhere"][0].startswith("Forget")


def test_search_by_time_and_notes_for_another_author(gateway: Gateway, alice: httpx.Client) -> None:
    with gateway.client() as owner:
        noted = owner.post(
            "/api/memories?scope=api:alice", json={"content": "Alice plays cello", "author": "mary"}
        )
    assert noted.status_code == 201 and noted.json()["author"] == "mary"
    refused = alice.post("/api/memories", json={"content": "Alice plays viola", "author": "mary"})
    assert refused.status_code == 403
    found = alice.get("/api/search", params={"q": "cello", "when": "2026-11"}).json()["results"]
    assert [hit["source"]["kind"] for hit in found] == ["memory"]
    assert alice.get("/api/search", params={"q": "cello", "when": "last year"}).json() == {
        "results": []
    }
