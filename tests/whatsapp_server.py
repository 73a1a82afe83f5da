"""A fake WhatsApp Cloud API (Graph API) on 127.0.0.1, and the webhook calls Meta would make.

The server answers `POST /v21.0/{phone-number-id}/messages` as Graph does: the bearer token
checked, a `wamid.` id for each message taken, and on demand the refusal Graph sends when
a person's 24-hour window is closed (400, code 131047) or a 429 to retry. `Notifications`
builds webhook bodies from the recorded payloads in `tests/fixtures/whatsapp/`, each with
a fresh message id, signed as Meta signs them (X-Hub-Signature-256 with the app secret).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn

from lore.channels.http import create_app
from lore.channels.http.auth import Clients
from lore.channels.whatsapp import WhatsAppChannel
from lore.channels.whatsapp_api import WhatsAppApi
from lore.config import WhatsAppConfig
from lore.runtime import build
from tests.fake_api import FakeApi, Request

if TYPE_CHECKING:
    from lore.clock import Clock
    from lore.config import Config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import Runtime

PHONE_NUMBER_ID = "106540352242922"
TOKEN = "EAAG-whatsapp-token-for-tests"
APP_SECRET = "9f86d081884c7d659a2feaa0c55ad015"
VERIFY_TOKEN = "lore-verify-token"
OWNER_TOKEN = "owner-token-for-tests"
FIXTURES = Path(__file__).parent / "fixtures" / "whatsapp"
WINDOW_CLOSED = {
    "error": {
        "message": "(#131047) Re-engagement message",
        "type": "OAuthException",
        "code": 131047,
        "error_data": {
            "messaging_product": "whatsapp",
            "details": "Message failed to send because more than 24 hours have passed since "
            "the customer last replied to this number.",
        },
        "fbtrace_id": "AbCdEfGhIjKlMnOp",
    }
}


def sign(body: bytes, secret: str = APP_SECRET) -> str:
    """X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


class FakeGraph(FakeApi):
    """`sent`: {"to", "text", "id"} for each message Graph took, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.closed: set[str] = set()  # wa_ids whose 24-hour window Graph says is closed
        self.failures: list[int] = []  # statuses to answer the next sends with

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/v21.0"

    def answer(self, request: Request) -> tuple[int, dict[str, Any]]:
        with self._changed:
            self.calls.append(f"{request.method} {request.path}")
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            error = {
                "message": "Invalid OAuth access token.",
                "type": "OAuthException",
                "code": 190,
            }
            return 401, {"error": error}
        if request.method != "POST" or request.path != f"/v21.0/{PHONE_NUMBER_ID}/messages":
            return 404, {"error": {"message": "Unknown path components", "code": 2500}}
        body = json.loads(request.body)
        assert body["messaging_product"] == "whatsapp" and body["type"] == "text"
        to, text = str(body["to"]), str(body["text"]["body"])
        with self._changed:
            status = self.failures.pop(0) if self.failures else 0
        if status:
            return status, {"error": {"message": "Rate limit hit", "code": 130429}}
        if to in self.closed:
            return 400, WINDOW_CLOSED
        wamid = f"wamid.{uuid.uuid4().hex.upper()}"
        with self._changed:
            self.sent.append({"to": to, "text": text, "id": wamid})
            self._changed.notify_all()
        return 200, {
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": wamid}],
        }

    def texts(self, to: str) -> list[str]:
        return [s["text"] for s in self.sent if s["to"] == to]


class Notifications:
    """Webhook bodies as Meta posts them, from the recorded fixtures."""

    @staticmethod
    def text(text: str, *, wa_id: str, name: str, at: float | None = None) -> dict[str, Any]:
        body = fixture("text_message")
        value = body["entry"][0]["changes"][0]["value"]
        value["contacts"][0].update(wa_id=wa_id, profile={"name": name})
        message = value["messages"][0]
        message.update(
            {
                "from": wa_id,
                "id": f"wamid.{uuid.uuid4().hex.upper()}",
                "timestamp": str(int(time.time() if at is None else at)),
                "text": {"body": text},
            }
        )
        return body

    @staticmethod
    def status(name: str, *, message_id: str, wa_id: str) -> dict[str, Any]:
        body = copy.deepcopy(fixture(name))
        status = body["entry"][0]["changes"][0]["value"]["statuses"][0]
        status.update(id=message_id, recipient_id=wa_id)
        return body

    @staticmethod
    def encode(body: dict[str, Any]) -> bytes:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")


def whatsapp_settings(fake: FakeGraph, **changes: Any) -> WhatsAppConfig:
    values: dict[str, Any] = {
        "access_token": TOKEN,
        "phone_number_id": PHONE_NUMBER_ID,
        "app_secret": APP_SECRET,
        "verify_token": VERIFY_TOKEN,
        "api_base_url": fake.api_url,
        **changes,
    }
    return WhatsAppConfig(**values)


async def no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


class WhatsAppGateway:
    """A running gateway with WhatsApp on it, and a way to post what Meta would."""

    def __init__(self, lore: Runtime, channel: WhatsAppChannel, url: str, fake: FakeGraph):
        self.lore = lore
        self.channel = channel
        self.url = url
        self.fake = fake

    async def post(self, body: dict[str, Any], *, secret: str = APP_SECRET) -> httpx.Response:
        raw = Notifications.encode(body)
        headers = {"X-Hub-Signature-256": sign(raw, secret), "Content-Type": "application/json"}
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            return await client.post("/whatsapp/webhook", content=raw, headers=headers)

    async def say(self, text: str, *, wa_id: str, name: str) -> dict[str, Any]:
        """Post a text message; the notification posted."""
        body = Notifications.text(text, wa_id=wa_id, name=name)
        response = await self.post(body)
        assert response.status_code == 200, response.text
        return body

    async def sent(self, count: int) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.fake.wait_sent, count)

    def client(self, token: str = OWNER_TOKEN) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


@asynccontextmanager
async def whatsapp_gateway(
    config: Config, model: ScriptedProvider, clock: Clock, fake: FakeGraph
) -> AsyncIterator[WhatsAppGateway]:
    """Lore with WhatsApp (`config.whatsapp`) behind the real gateway on 127.0.0.1, served
    by uvicorn in this event loop as `lore serve` runs it; torn down as a stopped one is."""
    lore = build(config, provider=model, clock=clock)
    api = WhatsAppApi(config.whatsapp, sleep=no_wait)
    channel = WhatsAppChannel(lore, config.whatsapp, api=api)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    app = create_app(lore, clients=Clients(OWNER_TOKEN, lore.config), channels=[channel], mcp=False)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield WhatsAppGateway(lore, channel, f"http://127.0.0.1:{sock.getsockname()[1]}", fake)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)
        sock.close()
        await channel.aclose()
        await lore.aclose()
