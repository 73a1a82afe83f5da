"""A fake Slack on 127.0.0.1: the Web API methods Lore calls and a Socket Mode websocket,
in the shapes Slack sends, and the signed Events API calls Slack would post.

The Web API (auth.test, users.info, conversations.info, chat.postMessage, chat.update,
apps.connections.open) checks the bot or app token, answers `ratelimited` (HTTP 429 with
Retry-After) or fails (5xx) on demand, and a post to a member id lands in that member's
DM, as Slack's do.
apps.connections.open hands out a `ws://` address; the socket greets with `hello`, then
carries `events_api` and `interactive` envelopes, and an envelope not acknowledged by its
envelope_id is sent again, with `retry_attempt` one higher, on the next connection, as
Slack does when a socket drops. The real slack_sdk clients talk to it through base_url.
Events come from the recorded payloads in `tests/fixtures/slack/`, with fresh ids.
"""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import parse_qs, urlencode

import httpx
import uvicorn
from aiohttp import WSMsgType, web

from lore.channels.http import create_app
from lore.channels.http.auth import Clients
from lore.channels.http.slack_webhook import EVENTS_PATH
from lore.channels.slack import SlackChannel
from lore.channels.slack_api import SlackApi
from lore.channels.slack_events import sign
from lore.config import SlackConfig
from lore.runtime import build

if TYPE_CHECKING:
    from lore.clock import Clock
    from lore.config import Config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import Runtime

BOT_USER = "U0LAN0Z89"
BOT_ID = "B0LAN0Z90"
BOT_TOKEN = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"
APP_TOKEN = "xapp-1-A0MDYCDME-1234567890-abcdef0123456789"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM = "T061EG9R6"
FIXTURES = Path(__file__).parent / "fixtures" / "slack"
OWNER_TOKEN = "owner-token-for-tests"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


class FakeSlack:
    """`sent`: {"method", "channel", "text", "thread_ts", "blocks", "ts"} for each post."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.users: dict[str, str] = {}  # member id -> display name
        self.channels: dict[str, str] = {}  # channel id -> name
        self.dms: dict[str, str] = {}  # member id -> DM channel id
        # method -> the statuses its next calls get: 429 is `ratelimited` with Retry-After
        # 3 (seconds), a 5xx Slack's own failure.
        self.failures: dict[str, list[int]] = {}
        self.acked: list[str] = []
        self.connections = 0
        # What crossed the wire, in order: (where, who, text) for people and Lore alike.
        self.wire: list[tuple[str, str, str]] = []
        self._changed = threading.Condition()
        self._unacked: dict[str, dict[str, Any]] = {}
        self._pushed: dict[str, dict[str, Any]] = {}
        self._held: asyncio.Event | None = None  # set: new connections wait for it
        self._transport: asyncio.BaseTransport | None = None
        self._socket: web.WebSocketResponse | None = None
        self._next_ts = 1700000000
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- running --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    async def _stop(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def wait(self, what: Any, timeout: float = 20.0) -> None:
        """Until `what()` is true (or the time is up, then AssertionError)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not what():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the fake Slack waited in vain")
                self._changed.wait(min(left, 0.05))

    def wait_sent(self, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        self.wait(lambda: len(self.sent) >= count, timeout)
        with self._changed:
            return list(self.sent)

    # -- the Web API ----------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        body = await request.read()
        if body and request.content_type == "application/json":
            args.update(json.loads(body))
        elif body:
            args.update({k: v[0] for k, v in parse_qs(body.decode()).items()})
        with self._changed:
            self.calls.append(method)
            queued = self.failures.get(method) or []
            status = queued.pop(0) if queued else 0
        if status == 429:
            data = {"ok": False, "error": "ratelimited"}
            return web.json_response(data, status=429, headers={"Retry-After": "3"})
        if status:
            return web.json_response({"ok": False, "error": "fatal_error"}, status=status)
        token = request.headers.get("Authorization", "")
        wanted = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != f"Bearer {wanted}":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        answer = self._answer(method, args)
        return web.json_response(answer)

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://lorefamily.slack.com/",
                "team": "Lore Family",
                "user": "lore",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "users.info":
            user = str(args.get("user", ""))
            name = self.users.get(user)
            if name is None:
                return {"ok": False, "error": "user_not_found"}
            return {
                "ok": True,
                "user": {
                    "id": user,
                    "team_id": TEAM,
                    "name": name.split()[0].lower(),
                    "real_name": name,
                    "tz": "Asia/Taipei",
                    "profile": {"real_name": name, "display_name": name, "team": TEAM},
                    "is_bot": False,
                },
            }
        if method == "conversations.info":
            channel = str(args.get("channel", ""))
            if channel not in self.channels:
                return {"ok": False, "error": "channel_not_found"}
            info = {"id": channel, "name": self.channels[channel], "is_channel": True}
            return {"ok": True, "channel": info}
        if method == "apps.connections.open":
            ticket = uuid.uuid4()
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}"}
        if method in ("chat.postMessage", "chat.update"):
            return self._post(method, args)
        return {"ok": False, "error": "unknown_method"}

    def _post(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel", ""))
        text = str(args.get("text", ""))
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not text and not args.get("blocks"):
            return {"ok": False, "error": "no_text"}
        channel = self.dms.get(channel, channel)  # a member id posts in their DM
        with self._changed:
            ts = str(args.get("ts") or self.next_ts())
            blocks = args.get("blocks")
            if isinstance(blocks, str):
                blocks = json.loads(blocks)
            self.sent.append(
                {
                    "method": method,
                    "channel": channel,
                    "text": text,
                    "thread_ts": args.get("thread_ts"),
                    "blocks": blocks,
                    "ts": ts,
                }
            )
            self.wire.append((_where(channel, args.get("thread_ts")), "Lore", self._shown(text)))
            self._changed.notify_all()
        return {
            "ok": True,
            "channel": channel,
            "ts": ts,
            "message": {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "text": text},
        }

    def _shown(self, text: str) -> str:
        """A posted text as Slack shows it: a mention as @Name, the escaping undone."""
        for member, person in self.users.items():
            text = text.replace(f"<@{member}>", f"@{person}")
        return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")

    def next_ts(self) -> str:
        self._next_ts += 1
        return f"{self._next_ts}.000100"

    # -- Socket Mode ----------------------------------------------------------------------

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        if self._held is not None:
            await self._held.wait()
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self._socket = socket
        self._transport = request.transport
        with self._changed:
            self.connections += 1
            again = list(self._unacked.values())
            self._changed.notify_all()
        await socket.send_json(fixture("hello"))
        for envelope in again:  # what the dropped socket left unacknowledged
            envelope["retry_attempt"] += 1
            envelope["retry_reason"] = "timeout"
            await socket.send_json(envelope)
        async for frame in socket:
            if frame.type != WSMsgType.TEXT:
                continue
            envelope_id = json.loads(frame.data).get("envelope_id", "")
            with self._changed:
                if self._unacked.pop(envelope_id, None) is not None:
                    self.acked.append(envelope_id)
                self._changed.notify_all()
        return socket

    def push(self, payload: dict[str, Any], kind: str = "events_api") -> str:
        """Send an envelope over the socket (an event_callback or an interaction)."""
        envelope_id = str(uuid.uuid4())
        envelope: dict[str, Any] = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": kind,
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
        }
        with self._changed:
            self._unacked[envelope_id] = envelope
            self._pushed[envelope_id] = envelope
        asyncio.run_coroutine_threadsafe(self._send(envelope), self._loop).result(10)
        return envelope_id

    async def _send(self, envelope: dict[str, Any]) -> None:
        if self._socket is not None and not self._socket.closed:
            await self._socket.send_json(envelope)

    def drop(self, *, hold: bool = False) -> None:
        """Cut the socket's connection, as a network does now and then; what was not
        acked comes again on the next one. `hold`: the next connection waits for
        `release()`."""
        transport = self._transport

        async def close() -> None:
            self._held = asyncio.Event() if hold else None
            self._socket = None
            if transport is not None:
                transport.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)

    def release(self) -> None:
        held = self._held
        if held is not None:
            self._loop.call_soon_threadsafe(held.set)

    def lose_ack(self, envelope_id: str) -> None:
        """As if the ack of this envelope never reached Slack: it is sent again."""
        with self._changed:
            self._unacked[envelope_id] = self._pushed[envelope_id]

    def all_acked(self) -> bool:
        with self._changed:
            return not self._unacked

    def transcript(self, where: str) -> str:
        """One place as its people saw it: who wrote what, and what Lore answered."""
        with self._changed:
            lines = [f"{who}: {text}" for place, who, text in self.wire if place == where]
        return "\n".join(lines) + "\n"


def _where(channel: str, thread_ts: Any) -> str:
    return f"{channel}:{thread_ts}" if thread_ts else channel


class Events:
    """Event payloads as Slack sends them, from the recorded fixtures, with fresh ids."""

    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake

    def message(
        self,
        text: str,
        *,
        user: str,
        channel: str,
        thread_ts: str | None = None,
        parent_user: str | None = None,
        mention: bool = False,
    ) -> dict[str, Any]:
        """A person's message (`mention`: the app_mention event of one that mentions Lore);
        a channel id starting with D is a DM."""
        direct = channel.startswith("D")
        name = "message_im" if direct else "app_mention" if mention else "message_channel"
        envelope = copy.deepcopy(fixture(name))
        event = envelope["event"]
        ts = self.fake.next_ts()
        event.update(user=user, channel=channel, text=text, ts=ts, event_ts=ts)
        event["client_msg_id"] = str(uuid.uuid4())
        if thread_ts:
            event["thread_ts"] = thread_ts
            event["parent_user_id"] = parent_user or user
        envelope["event_id"] = "Ev" + uuid.uuid4().hex[:9].upper()
        envelope["event_time"] = int(time.time())
        shown = text.replace(f"<@{BOT_USER}>", "@lore")
        for member, person in self.fake.users.items():
            shown = shown.replace(f"<@{member}>", f"@{person}")
        with self.fake._changed:
            self.fake.wire.append((_where(channel, thread_ts), self.fake.users[user], shown))
        return envelope

    @staticmethod
    def press(
        user: str, chat: str, channel: str, message_ts: str, *, allow: bool
    ) -> dict[str, Any]:
        payload = copy.deepcopy(fixture("block_actions"))
        payload["user"]["id"] = user
        payload["container"].update(channel_id=channel, message_ts=message_ts)
        payload["channel"]["id"] = channel
        payload["message"]["ts"] = message_ts
        action = payload["actions"][0]
        action.update(value=chat, action_id="lore_approve" if allow else "lore_deny")
        return payload


async def no_wait(seconds: float) -> None:
    """The backoff's sleep in tests: no waiting, just a turn of the event loop."""
    await asyncio.sleep(0)


def slack_settings(fake: FakeSlack, **changes: Any) -> SlackConfig:
    """Slack settings pointing at the fake (Events API and Socket Mode both on)."""
    values: dict[str, Any] = {
        "bot_token": BOT_TOKEN,
        "app_token": APP_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "api_base_url": fake.base_url,
        **changes,
    }
    return SlackConfig(**values)


class SlackLore:
    """Lore with Slack running, behind a running gateway, and what Slack would do to it."""

    def __init__(self, lore: Runtime, channel: SlackChannel, url: str, fake: FakeSlack) -> None:
        self.lore = lore
        self.channel = channel
        self.url = url
        self.fake = fake
        self.events = Events(fake)
        self.waits: list[float] = []  # what the Web API client was told to wait
        self.http = httpx.AsyncClient(base_url=url, timeout=30)  # as Slack's, kept open

    async def post(
        self,
        payload: dict[str, Any],
        *,
        secret: str = SIGNING_SECRET,
        timestamp: int | None = None,
        retry: int = 0,
    ) -> httpx.Response:
        """An Events API call, signed as Slack signs it."""
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        headers = {
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(secret, body, stamp),
        }
        if retry:
            headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "timeout"})
        return await self.http.post(EVENTS_PATH, content=body, headers=headers)

    async def post_form(self, payload: dict[str, Any]) -> httpx.Response:
        """An interactivity call: the payload as the form field Slack posts."""
        body = urlencode({"payload": json.dumps(payload)}).encode()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(SIGNING_SECRET, body, stamp),
        }
        return await self.http.post(EVENTS_PATH, content=body, headers=headers)

    async def say(self, text: str, *, socket: bool = False, **where: Any) -> dict[str, Any]:
        """Someone writes; the event arrives over the socket or as an Events API call
        (a mention of Lore in a channel sends both the message and the app_mention)."""
        envelope = self.events.message(text, **where)
        calls = [envelope]
        if where.get("mention"):
            twin = copy.deepcopy(envelope)
            twin["event"]["type"] = "message"
            twin["event"]["channel_type"] = "channel"
            twin["event_id"] = "Ev" + uuid.uuid4().hex[:9].upper()
            calls.append(twin)
        for call in calls:
            if socket:
                await asyncio.to_thread(self.fake.push, call)
            else:
                response = await self.post(call)
                assert response.status_code == 200, response.text
        return envelope

    async def sent(self, count: int) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.fake.wait_sent, count)

    async def settle(self, count: int) -> list[dict[str, Any]]:
        """Wait for `count` posts, then for the turns' after-work (extraction)."""
        sent = await self.sent(count)
        await self.channel.drain()
        await self.lore.background.drain()
        return sent

    def client(self, token: str = OWNER_TOKEN) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


@asynccontextmanager
async def slack_lore(
    config: Config,
    model: ScriptedProvider,
    clock: Clock,
    fake: FakeSlack,
    *,
    socket_up: bool | None = None,
) -> AsyncIterator[SlackLore]:
    """Lore with Slack (`config.slack`) running as `lore serve` runs it, the gateway with
    /slack/events on 127.0.0.1; stopped on exit, as a stopped `lore serve` is. With an
    app token it waits for the socket, unless `socket_up` is False."""
    lore = build(config, provider=model, clock=clock)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(0)

    api = SlackApi(config.slack, sleep=sleep)
    channel = SlackChannel(lore, config.slack, api=api, ping_interval=0.2)
    app = create_app(lore, clients=Clients(OWNER_TOKEN, lore.config), mcp=False, channels=[channel])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    running = asyncio.create_task(channel.run_forever())
    try:
        while not (server.started and channel.ready.is_set()):
            for task in (serving, running):
                if task.done():
                    task.result()
            await asyncio.sleep(0.01)
        if bool(config.slack.app_token) if socket_up is None else socket_up:
            await asyncio.to_thread(fake.wait, lambda: fake.connections > 0)
        harness = SlackLore(lore, channel, f"http://127.0.0.1:{sock.getsockname()[1]}", fake)
        harness.waits = waits
        try:
            yield harness
        finally:
            await harness.http.aclose()
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, timeout=30)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await channel.aclose()
        await lore.aclose()
        sock.close()
