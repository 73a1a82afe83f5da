"""Why over HTTP: `GET /api/sessions/{id}/messages/{n}/why` under the same token and
scope checks as every session route, and a "why" link on each reply of the web page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from tests.gateway_server import Gateway, running_gateway

SCOPE = "api:alice"


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[api.clients.alice]\ntoken = "alice-token"\nscopes = ["api:alice"]\n'
        '[api.clients.bob]\ntoken = "bob-token"\nscopes = ["api:bob"]\n',
        encoding="utf-8",
    )
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    from lore.runtime import build

    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _client(gateway: Gateway, token: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30)


async def _a_reply_resting_on(gateway: Gateway, model: ScriptedProvider, text: str) -> int:
    lore = gateway.lore
    memory, _ = lore.memory.remember(SCOPE, text, author="alice", via="api", now=lore.clock.now())
    model.reply("Хорошо.")
    await lore.conversation(SCOPE, emit=lambda e: None, author="alice").send("что я пью?")
    return memory.id


async def test_the_why_route_shows_a_replys_memories_to_its_scope_only(
    gateway: Gateway, model: ScriptedProvider
) -> None:
    memory_id = await _a_reply_resting_on(gateway, model, "Алиса пьёт улун")
    session_id = gateway.lore.session(SCOPE).meta.session_id
    async with _client(gateway, "alice-token") as alice:
        why = await alice.get(f"/api/sessions/{session_id}/messages/1/why", params={"scope": SCOPE})
        assert why.status_code == 200, why.text
        assert why.json()["memories"] == [
            {"id": memory_id, "status": "active", "text": "Алиса пьёт улун"}
        ]
        live = await alice.get("/api/sessions/live/messages/1/why", params={"scope": SCOPE})
        assert live.json()["session_id"] == session_id
        for n in (0, 2, 99):
            missing = await alice.get(
                f"/api/sessions/live/messages/{n}/why", params={"scope": SCOPE}
            )
            assert missing.status_code == 404, (n, missing.text)
    async with _client(gateway, "bob-token") as bob:
        other = await bob.get(f"/api/sessions/{session_id}/messages/1/why", params={"scope": SCOPE})
        assert other.status_code == 403 and "улун" not in other.text
        own = await bob.get(
            f"/api/sessions/{session_id}/messages/1/why", params={"scope": "api:bob"}
        )
        assert own.status_code == 404 and "улун" not in own.text
    async with _client(gateway, "") as nobody:
        assert (await nobody.get("/api/sessions/live/messages/1/why")).status_code == 401


async def test_each_reply_in_the_web_transcript_links_to_its_why(
    gateway: Gateway, model: ScriptedProvider
) -> None:
    memory_id = await _a_reply_resting_on(gateway, model, "爱丽丝喝乌龙茶")
    with gateway.page() as web:
        page = web.get("/ui/sessions/live", params={"scope": SCOPE})
        assert page.status_code == 200
        link = f"/ui/sessions/{gateway.lore.session(SCOPE).meta.session_id}/messages/1/why"
        assert f'href="{link}?scope=api%3Aalice"' in page.text
        assert page.text.count('class="why"') == 1  # the reply, not the question
        why = web.get(link, params={"scope": SCOPE})
        assert why.status_code == 200 and f"#{memory_id} 爱丽丝喝乌龙茶" in why.text
