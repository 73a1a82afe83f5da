"""WhatsApp's messages are recorded in the chat ledger before Meta gets its 200, on SQLite
and on PostgreSQL: a notification delivered twice is answered once, after a restart too,
and the sender's conversation keeps its name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider, Step
from tests.postgres_server import storage  # noqa: F401  (local and PostgreSQL)
from tests.whatsapp_server import FakeGraph, Notifications, whatsapp_gateway, whatsapp_settings

AMY = "886912345678"


@pytest.fixture
def fake() -> Iterator[FakeGraph]:
    with FakeGraph() as server:
        yield server


async def test_a_notification_delivered_twice_is_answered_once_after_a_restart_too(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeGraph
) -> None:
    config = replace(config, whatsapp=whatsapp_settings(fake, allow=(AMY,)))
    model.default = lambda request: Step(text="好的 / хорошо")
    body = Notifications.text("hello", wa_id=AMY, name="Amy 美美", at=clock.now().timestamp())
    async with whatsapp_gateway(config, model, clock, fake) as wa:
        assert (await wa.post(body)).status_code == 200
        assert (await wa.post(body)).status_code == 200
        await wa.sent(1)
        await wa.channel.drain()
    async with whatsapp_gateway(config, model, clock, fake) as wa:
        assert (await wa.post(body)).status_code == 200
        await wa.channel.drain()
        users = [m for m in wa.lore.session(f"whatsapp:{AMY}").messages if m["role"] == "user"]
        names = wa.lore.chat_ledger.conversation_names()
    assert fake.texts(AMY) == ["好的 / хорошо"]
    assert len(users) == 1 and users[0]["author"] == "Amy 美美"
    assert names[f"whatsapp:{AMY}"].name == "Amy 美美"
