"""A fake LINE Messaging API on 127.0.0.1, and the webhook calls LINE would make.

The server answers the endpoints Lore uses in the shapes LINE sends: bot info, profiles (of
a friend, a group member, a room member), reply (each reply token works once) and push
(a retry key seen before gets 409, as LINE does, and sends nothing), with failures on
demand. `Webhooks` builds signed webhook bodies from the recorded payloads in
`tests/fixtures/line/`, each with fresh ids and a reply token the server will accept.
The real line-bot-sdk client talks to the server through its host setting.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import hmac
import json
import re
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
from lore.channels.line import LineChannel
from lore.channels.line_api import LineApi
from lore.config import LineConfig
from lore.runtime import build
from tests.fake_api import FakeApi, Request

if TYPE_CHECKING:
    from lore.clock import Clock
    from lore.config import Config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import Runtime

BOT_ID = "Ub0f1a2b3c4d5e6f708192a3b4c5d6e7f"
BOT_NAME = "Lore"
SECRET = "3f1c0a5e9b7d2c4e6f8a0b1c2d3e4f5a"
TOKEN = "line-access-token-for-tests"
FIXTURES = Path(__file__).parent / "fixtures" / "line"
OWNER_TOKEN = "owner-token-for-tests"


def sign(body: bytes, secret: str = SECRET) -> str:
    """X-Line-Signature: base64 of the HMAC-SHA256 of the raw body with the channel secret."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


class FakeLine(FakeApi):
    """`sent`: {"kind": reply|push, "to", "messages", "retry_key", "ids"} for each call."""

    def __init__(self) -> None:
        super().__init__()
        self.profiles: dict[str, str] = {}  # user id -> display name
        self.groups: dict[str, str] = {}  # group id -> the group's name (its summary)
        self.calls: list[str] = []
        # What crossed the wire, in order: ("webhook", chat, user id, text) for a message
        # LINE delivered, ("reply" | "push", chat, "", text) for what Lore sent.
        self.wire: list[tuple[str, str, str, str]] = []
        self.failures: dict[str, list[int]] = {}  # "reply" / "push" -> statuses to answer
        self._issued: set[str] = set()
        self._used: set[str] = set()
        self._retry_keys: set[str] = set()
        self._reply_to: dict[str, str] = {}  # reply token -> where it answers
        self._next_id = 600000000000000000

    def issue_reply_token(self, where: str) -> str:
        token = uuid.uuid4().hex
        with self._changed:
            self._issued.add(token)
            self._reply_to[token] = where
        return token

    def fail(self, kind: str, *statuses: int) -> None:
        """Answer the next `kind` calls ("reply", "push") with these statuses."""
        with self._changed:
            self.failures.setdefault(kind, []).extend(statuses)

    # -- the API --------------------------------------------------------------------------

    def answer(self, request: Request) -> tuple[int, dict[str, Any]]:
        body = json.loads(request.body) if request.body else {}
        return self._answer(request.method, request.path, body, request.headers)

    def _answer(
        self, method: str, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, Any]]:
        with self._changed:
            self.calls.append(f"{method} {path}")
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, {"message": "Authentication failed. Confirm that the access token"}
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/v2/bot/info":
            return 200, {
                "userId": BOT_ID,
                "basicId": "@216rukvr",
                "displayName": BOT_NAME,
                "chatMode": "bot",
                "markAsReadMode": "auto",
            }
        if method == "GET" and parts[:3] == ["v2", "bot", "profile"]:
            return self._profile(parts[3])
        if method == "GET" and len(parts) == 5 and parts[2] == "group" and parts[4] == "summary":
            return self._summary(parts[3])
        if method == "GET" and len(parts) == 6 and parts[2] in ("group", "room"):
            return self._profile(parts[5])
        if method == "POST" and path == "/v2/bot/message/reply":
            return self._reply(body)
        if method == "POST" and path == "/v2/bot/message/push":
            return self._push(body, headers.get("x-line-retry-key", ""))
        return 404, {"message": "Not found"}

    def _summary(self, group_id: str) -> tuple[int, dict[str, Any]]:
        name = self.groups.get(group_id)
        if name is None:
            return 404, {"message": "Not found"}
        picture = f"https://profile.line-scdn.net/{group_id}"
        return 200, {"groupId": group_id, "groupName": name, "pictureUrl": picture}

    def _profile(self, user_id: str) -> tuple[int, dict[str, Any]]:
        name = self.profiles.get(user_id)
        if name is None:
            return 404, {"message": "Not found"}
        return 200, {"displayName": name, "userId": user_id, "language": "en"}

    def _failure(self, kind: str) -> int:
        with self._changed:
            queue = self.failures.get(kind) or []
            return queue.pop(0) if queue else 0

    def _reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status = self._failure("reply")
        if status:
            return status, {"message": "failure on demand"}
        token = body.get("replyToken", "")
        problem = _invalid(body.get("messages", []))
        if problem:
            return 400, {"message": "The request body has 1 error(s)", "details": [problem]}
        with self._changed:
            if token not in self._issued or token in self._used:
                return 400, {"message": "Invalid reply token"}
            self._used.add(token)
            return 200, self._record("reply", self._reply_to[token], body["messages"])

    def _push(self, body: dict[str, Any], retry_key: str) -> tuple[int, dict[str, Any]]:
        status = self._failure("push")
        if status == 429:
            return 429, {"message": "You have reached your monthly limit."}
        if status:
            return status, {"message": "failure on demand"}
        problem = _invalid(body.get("messages", []))
        if problem:
            return 400, {"message": "The request body has 1 error(s)", "details": [problem]}
        with self._changed:
            if retry_key and retry_key in self._retry_keys:
                return 409, {"message": "The retry key is already accepted"}
            if retry_key:
                self._retry_keys.add(retry_key)
            return 200, self._record("push", body["to"], body["messages"], retry_key)

    def _record(
        self, kind: str, to: str, messages: list[dict[str, Any]], retry_key: str = ""
    ) -> dict[str, Any]:
        sent = []
        for _ in messages:
            self._next_id += 1
            sent.append({"id": str(self._next_id), "quoteToken": uuid.uuid4().hex})
        for message in messages:
            self.wire.append((kind, to, "", _rendered(message, self.profiles)))
        self.sent.append(
            {
                "kind": kind,
                "to": to,
                "messages": messages,
                "retry_key": retry_key,
                "ids": [s["id"] for s in sent],
            }
        )
        self._changed.notify_all()
        return {"sentMessages": sent}

    def transcript(self, chat: str) -> str:
        """One chat as its people saw it: who wrote what, and what Lore answered how."""
        lines = []
        for kind, where, user, text in self.wire:
            if where != chat:
                continue
            who = self.profiles.get(user, user) if kind == "webhook" else f"Lore ({kind})"
            lines.append(f"{who}: {text}")
        return "\n".join(lines) + "\n"


def _textv2(text: str) -> list[tuple[str, str]]:
    """A textV2 text as LINE reads it: ("text", literal) and ("key", placeholder) parts.
    `{{` and `}}` are a literal brace; `{key}` (letters, digits, _) a placeholder; any
    other brace is an error (ValueError)."""
    parts: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        if text.startswith(("{{", "}}"), i):
            parts.append(("text", text[i]))
            i += 2
        elif text[i] == "{":
            end = text.find("}", i)
            key = text[i + 1 : end] if end > 0 else ""
            if not re.fullmatch(r"[A-Za-z0-9_]{1,20}", key):
                raise ValueError(f"messages[0].text: a brace at {i} is neither {{{{ nor {{key}}")
            parts.append(("key", key))
            i = end + 1
        elif text[i] == "}":
            raise ValueError(f"messages[0].text: a lone }} at {i}")
        else:
            parts.append(("text", text[i]))
            i += 1
    return parts


def _invalid(messages: list[dict[str, Any]]) -> str:
    """What LINE would refuse in these messages ("" when nothing)."""
    for message in messages:
        if message.get("type") != "textV2":
            continue
        keys = set(message.get("substitution") or {})
        try:
            used = {value for kind, value in _textv2(str(message.get("text", ""))) if kind == "key"}
        except ValueError as exc:
            return str(exc)
        if used - keys:
            return f"messages[0].substitution: no value for {sorted(used - keys)}"
    return ""


def _rendered(message: dict[str, Any], names: dict[str, str]) -> str:
    """A sent message as LINE shows it: a textV2 mention becomes @Name."""
    text = str(message.get("text", ""))
    if message.get("type") != "textV2":
        return text
    substitution = message.get("substitution") or {}
    shown = []
    for kind, value in _textv2(text):
        if kind == "key":
            user = substitution[value].get("mentionee", {}).get("userId", "")
            value = f"@{names.get(user, user)}"
        shown.append(value)
    return "".join(shown)


class Webhooks:
    """Webhook bodies as LINE sends them, from the recorded fixtures, with fresh ids."""

    def __init__(self, fake: FakeLine) -> None:
        self.fake = fake
        self._next_message = 470000000000000000

    def text(
        self,
        text: str,
        *,
        user: str,
        group: str | None = None,
        room: str | None = None,
        mention_bot: bool = False,
        quoted: str | None = None,
    ) -> dict[str, Any]:
        """One text message event in a group, a room or a 1:1 chat with `user`."""
        name = "message_group" if group else "message_room" if room else "message_user"
        event = copy.deepcopy(fixture(name)["events"][0])
        event["source"]["userId"] = user
        if group:
            event["source"]["groupId"] = group
        if room:
            event["source"]["roomId"] = room
        self._next_message += 1
        message = event["message"]
        message.update(id=str(self._next_message), text=text, quoteToken=uuid.uuid4().hex)
        if mention_bot:
            at = f"@{BOT_NAME}"
            index = len(text[: text.index(at)].encode("utf-16-le")) // 2
            message["mention"] = {
                "mentionees": [
                    {
                        "index": index,
                        "length": len(at),
                        "type": "user",
                        "userId": BOT_ID,
                        "isSelf": True,
                    }
                ]
            }
        if quoted:
            message["quotedMessageId"] = quoted
        with self.fake._changed:
            self.fake.wire.append(("webhook", group or room or user, user, text))
        return self._fresh(event, group or room or user)

    def event(self, name: str, **source: str) -> dict[str, Any]:
        """A follow, join or leave event (`name` is the fixture), from this source."""
        event = copy.deepcopy(fixture(name)["events"][0])
        event["source"].update(source)
        where = source.get("groupId") or source.get("roomId") or source.get("userId", "")
        return self._fresh(event, where)

    def _fresh(self, event: dict[str, Any], where: str) -> dict[str, Any]:
        event["webhookEventId"] = uuid.uuid4().hex.upper()[:26]
        event["timestamp"] = int(time.time() * 1000)
        if "replyToken" in event:
            event["replyToken"] = self.fake.issue_reply_token(where)
        return event

    @staticmethod
    def body(*events: dict[str, Any]) -> bytes:
        payload = {"destination": BOT_ID, "events": list(events)}
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")


@asynccontextmanager
async def running_gateway(lore: Runtime, line: LineChannel) -> AsyncIterator[str]:
    """The real gateway app with LINE's webhook, served by uvicorn on 127.0.0.1 in this
    event loop (as `lore serve` runs it); yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    app = create_app(lore, clients=Clients(OWNER_TOKEN, lore.config), channels=[line], mcp=False)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)
        sock.close()


async def no_wait(seconds: float) -> None:
    """The backoff's sleep in tests: no waiting, just a turn of the event loop."""
    await asyncio.sleep(0)


def line_settings(fake: FakeLine, **changes: Any) -> LineConfig:
    """LINE settings pointing at the fake server; `changes` as LineConfig's fields."""
    values: dict[str, Any] = {
        "channel_secret": SECRET,
        "access_token": TOKEN,
        "api_base_url": fake.base_url,
        **changes,
    }
    return LineConfig(**values)


class LineGateway:
    """A running gateway with LINE on it, and a way to post what LINE would."""

    def __init__(self, lore: Runtime, channel: LineChannel, url: str, fake: FakeLine) -> None:
        self.lore = lore
        self.channel = channel
        self.url = url
        self.fake = fake
        self.hooks = Webhooks(fake)

    async def post(self, *events: dict[str, Any], secret: str = SECRET) -> httpx.Response:
        body = Webhooks.body(*events)
        headers = {"X-Line-Signature": sign(body, secret), "Content-Type": "application/json"}
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            return await client.post("/line/webhook", content=body, headers=headers)

    async def say(self, text: str, **where: Any) -> httpx.Response:
        response = await self.post(self.hooks.text(text, **where))
        assert response.status_code == 200, response.text
        return response

    async def sent(self, count: int) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.fake.wait_sent, count)

    def client(self, token: str = OWNER_TOKEN) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


@asynccontextmanager
async def line_gateway(
    config: Config,
    model: ScriptedProvider,
    clock: Clock,
    fake: FakeLine,
    monotonic: Any = None,
) -> AsyncIterator[LineGateway]:
    """Lore with LINE (`config.line`) behind a running gateway; torn down on exit, as a
    stopped `lore serve` is."""
    lore = build(config, provider=model, clock=clock)
    extra = {"monotonic": monotonic} if monotonic is not None else {}
    channel = LineChannel(lore, config.line, api=LineApi(config.line, sleep=no_wait), **extra)
    try:
        async with running_gateway(lore, channel) as url:
            yield LineGateway(lore, channel, url, fake)
    finally:
        await channel.aclose()
        await lore.aclose()
