"""A fake Discord on 127.0.0.1: the REST API (`/api/v10/...`: users/@me, the application,
gateway/bot, command sync, channel messages, DMs, interaction callbacks and follow-ups)
and the gateway websocket (HELLO, IDENTIFY, READY, GUILD_CREATE, heartbeat and its ACK,
MESSAGE_CREATE, INTERACTION_CREATE, RESUME and RESUMED, INVALID_SESSION), in the shapes
Discord sends. The real discord.py client talks to it through `Route.BASE` and the address
`GET /gateway/bot` gives. It runs an aiohttp server in a thread of its own.

On demand: a 429 (with `retry_after`, the `Via` header and the rate-limit headers Discord
sends) for the next message sends, and a dropped gateway connection, after which events
wait for the client's RESUME and are replayed from the sequence number it names.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self

from aiohttp import WSMsgType, web

__all__ = ["BOT", "FAMILY_GUILD", "FakeDiscord"]

BOT = {
    "id": "900000000000000001",
    "username": "Lore",
    "global_name": "Lore",
    "discriminator": "0",
    "avatar": None,
    "bot": True,
    "verified": True,
    "flags": 0,
    "mfa_enabled": False,
    "email": None,
}
APPLICATION_ID = "900000000000000002"
FAMILY_GUILD = "800000000000000001"
SESSION_START = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}

_ids = itertools.count(1_000_000_000_000_000_000)


def snowflake() -> str:
    return str(next(_ids))


def user(user_id: str, name: str, nick: str | None = None) -> dict[str, Any]:
    """A person, as `author` (and, with `nick`, their server nickname)."""
    data = {"id": user_id, "username": name.lower(), "global_name": name, "discriminator": "0"}
    data["avatar"] = None
    if nick is not None:
        data["nick"] = nick
    return data


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class _Session:
    id: str
    events: list[dict[str, Any]] = field(default_factory=list)  # every dispatch, in order
    intents: int = 0

    @property
    def seq(self) -> int:
        return len(self.events)


class FakeDiscord:
    def __init__(self, guild_channels: dict[str, str] | None = None) -> None:
        # Channel id -> name of the server's text channels; a thread is added by `thread`.
        self.channels = dict(guild_channels or {})
        self.threads: dict[str, str] = {}  # thread id -> its parent channel
        self.sent: list[dict[str, Any]] = []  # every message Lore posted, with "channel_id"
        self.callbacks: list[dict[str, Any]] = []  # interaction responses
        self.calls: list[str] = []  # "METHOD /path" of every REST call
        self.identifies: list[dict[str, Any]] = []
        self.resumes: list[dict[str, Any]] = []
        self.rate_limit = 0  # answer this many message sends with 429
        self.retry_after = 0.3
        self.dm_channels: dict[str, str] = {}  # user id -> DM channel id
        self.messages: dict[str, dict[str, Any]] = {}  # every message by id
        self.names: dict[str, str] = {BOT["id"]: "Lore"}  # who is who, for the transcript
        self.wire: list[tuple[str, str]] = []  # (channel id, message id) in the order seen
        self._session: _Session | None = None
        self._socket: web.WebSocketResponse | None = None
        self._invalid_next = False
        self._held = asyncio.Event()  # set: RESUMEs are answered at once
        self._held.set()
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- running --------------------------------------------------------------------------

    @property
    def api_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    def __enter__(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        app.router.add_get("/gateway", self._gateway)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _run(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(10)

    # -- what people do -------------------------------------------------------------------

    def say(
        self,
        text: str,
        *,
        channel: str,
        author: dict[str, Any],
        mention_bot: bool = False,
        reply_to: str | None = None,
        guild: bool = True,
        message_id: str | None = None,
    ) -> str:
        """A person writes in a channel (a DM with `guild=False`); the message id."""
        message_id = message_id or snowflake()
        nick = author.get("nick")
        self.names[author["id"]] = nick or author["global_name"]
        person = {k: v for k, v in author.items() if k != "nick"}
        message: dict[str, Any] = {
            "id": message_id,
            "type": 19 if reply_to else 0,
            "channel_id": channel,
            "author": person,
            "content": f"<@{BOT['id']}> {text}" if mention_bot else text,
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [dict(BOT)] if mention_bot else [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "flags": 0,
            "components": [],
            "nonce": snowflake(),
        }
        if not guild:
            self.dm_channels.setdefault(person["id"], channel)
        if guild:
            message["guild_id"] = FAMILY_GUILD
            message["member"] = {
                "nick": nick,
                "roles": [],
                "joined_at": "2026-01-01T00:00:00+00:00",
                "deaf": False,
                "mute": False,
                "flags": 0,
            }
        if reply_to is not None:
            message["message_reference"] = {
                "type": 0,
                "message_id": reply_to,
                "channel_id": channel,
                "guild_id": FAMILY_GUILD,
            }
            if reply_to in self.messages:
                message["referenced_message"] = self.messages[reply_to]
        self.messages[message_id] = message
        self.wire.append((channel, message_id))
        self.dispatch("MESSAGE_CREATE", message)
        return message_id

    def slash(self, text: str, *, channel: str, author: dict[str, Any]) -> str:
        """A person runs `/lore text:<text>` in a server channel; the interaction id."""
        interaction_id = snowflake()
        nick = author.get("nick")
        person = {k: v for k, v in author.items() if k != "nick"}
        self.dispatch(
            "INTERACTION_CREATE",
            {
                "id": interaction_id,
                "application_id": APPLICATION_ID,
                "type": 2,
                "token": f"token-{interaction_id}",
                "version": 1,
                "channel_id": channel,
                "channel": {"id": channel, "type": 0, "guild_id": FAMILY_GUILD},
                "guild_id": FAMILY_GUILD,
                "member": {
                    "user": person,
                    "nick": nick,
                    "roles": [],
                    "joined_at": "2026-01-01T00:00:00+00:00",
                    "deaf": False,
                    "mute": False,
                    "flags": 0,
                    "permissions": "2248473465835073",
                },
                "locale": "en-US",
                "guild_locale": "en-US",
                "app_permissions": "2248473465835073",
                "attachment_size_limit": 10485760,
                "entitlements": [],
                "authorizing_integration_owners": {"0": FAMILY_GUILD},
                "context": 0,
                "data": {
                    "id": "900000000000000100",
                    "name": "lore",
                    "type": 1,
                    "options": [{"name": "text", "type": 3, "value": text}],
                },
            },
        )
        return interaction_id

    def press(self, message_id: str, label: str, *, author: dict[str, Any]) -> None:
        """A person presses the button labelled `label` under one of Lore's messages."""
        message = self.messages[message_id]
        buttons = [c for row in message.get("components", []) for c in row["components"]]
        [button] = [b for b in buttons if b.get("label") == label]
        interaction_id = snowflake()
        channel = message["channel_id"]
        data: dict[str, Any] = {
            "id": interaction_id,
            "application_id": APPLICATION_ID,
            "type": 3,
            "token": f"token-{interaction_id}",
            "version": 1,
            "channel_id": channel,
            "message": message,
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"1": author["id"]},
            "app_permissions": "2248473465835073",
            "attachment_size_limit": 10485760,
            "data": {"custom_id": button["custom_id"], "component_type": 2},
        }
        if channel in self.channels or channel in self.threads:
            data["guild_id"] = FAMILY_GUILD
            data["member"] = {"user": author, "roles": [], "joined_at": _now(), "flags": 0}
            data["context"] = 0
        else:
            data["user"] = author
            data["context"] = 1
        self.dispatch("INTERACTION_CREATE", data)

    def thread(self, name: str, *, parent: str) -> str:
        """A thread started in `parent` (THREAD_CREATE); its id."""
        thread_id = snowflake()
        self.threads[thread_id] = parent
        self.dispatch(
            "THREAD_CREATE", {**self._thread_payload(thread_id, name), "newly_created": True}
        )
        return thread_id

    # -- what the operator does -----------------------------------------------------------

    def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """An event for the bot: sent now if the gateway is connected, else kept for the
        RESUME that will ask for it."""
        self._run(self._dispatch(event, data))

    def drop(self, *, invalidate: bool = False, hold: bool = False) -> None:
        """The gateway connection breaks (close code 4000, as when a Discord node goes
        away); with `invalidate`, the next RESUME is refused with INVALID_SESSION; with
        `hold`, it is answered only at `release()` (what is said meanwhile waits)."""
        self._invalid_next = invalidate
        if hold:
            self._held.clear()
        self._run(self._drop())

    def release(self) -> None:
        """Answer the RESUME that `drop(hold=True)` kept waiting."""
        self._loop.call_soon_threadsafe(self._held.set)

    async def _drop(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close(code=4000, message=b"node restarting")

    def wait_sent(self, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The messages Lore posted, once they are `count` (or the time is up)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.sent) < count and time.monotonic() < deadline:
                self._changed.wait(0.05)
            return list(self.sent)

    def wait_for(self, what: Any, timeout: float = 20.0) -> bool:
        """Until `what()` is true (or the time is up)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not what() and time.monotonic() < deadline:
                self._changed.wait(0.05)
            return bool(what())

    def transcript(self, channel: str) -> str:
        """One channel as its people saw it: who wrote what, mentions by name."""
        lines = []
        for where, message_id in self.wire:
            if where != channel:
                continue
            message = self.messages[message_id]
            text = message["content"]
            for user_id, name in self.names.items():
                text = text.replace(f"<@{user_id}>", f"@{name}")
            if message["author"] is BOT:
                who = "Lore (reply)" if message.get("message_reference") else "Lore"
            else:
                who = self.names[message["author"]["id"]]
                replied = message.get("referenced_message") or {}
                if replied.get("author") is BOT:
                    who += " (reply to Lore)"
            lines.append(f"{who}: {text}")
        return "\n".join(lines) + "\n"

    def _changed_now(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- the gateway ----------------------------------------------------------------------

    async def _dispatch(self, event: str, data: dict[str, Any]) -> None:
        session = self._session
        if session is None:
            raise AssertionError("no bot is connected to the fake gateway")
        packet = {"op": 0, "t": event, "s": session.seq + 1, "d": data}
        session.events.append(packet)
        if self._socket is not None:
            await self._socket.send_str(json.dumps(packet))

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        await socket.send_json({"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": 41250}})
        async for frame in socket:
            if frame.type != WSMsgType.TEXT:
                continue
            packet = json.loads(frame.data)
            op, data = packet["op"], packet.get("d")
            if op == 1:
                await socket.send_json({"op": 11, "s": None, "t": None, "d": None})
            elif op == 2:
                await self._identify(socket, data)
            elif op == 6:
                await self._resume(socket, data)
        if self._socket is socket:
            self._socket = None
        self._changed_now()
        return socket

    async def _identify(self, socket: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.identifies.append(data)
        self._session = _Session(id=snowflake(), intents=int(data.get("intents") or 0))
        self._socket = socket
        await self._dispatch(
            "READY",
            {
                "v": 10,
                "user": BOT,
                "guilds": [{"id": FAMILY_GUILD, "unavailable": True}],
                "session_id": self._session.id,
                "session_type": "normal",
                "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gateway",
                "shard": [0, 1],
                "application": {"id": APPLICATION_ID, "flags": 8953856},
                "private_channels": [],
                "relationships": [],
                "presences": [],
                "guild_join_requests": [],
                "geo_ordered_rtc_regions": ["us-west"],
                "user_settings": {},
                "_trace": ['["gateway-prd-us-east1-b-fake",{"micros":1234}]'],
            },
        )
        await self._dispatch("GUILD_CREATE", self._guild())
        self._changed_now()

    async def _resume(self, socket: web.WebSocketResponse, data: dict[str, Any]) -> None:
        self.resumes.append(data)
        self._changed_now()
        await self._held.wait()
        session = self._session
        if self._invalid_next or session is None or data.get("session_id") != session.id:
            self._invalid_next = False
            await socket.send_json({"op": 9, "s": None, "t": None, "d": False})
            return
        self._socket = socket
        for packet in session.events[int(data.get("seq") or 0) :]:
            await socket.send_str(json.dumps(packet))
        await self._dispatch("RESUMED", {"_trace": ['["gateway-prd-fake",{"micros":10}]']})
        self._changed_now()

    def _guild(self) -> dict[str, Any]:
        everyone = {
            "id": FAMILY_GUILD,
            "name": "@everyone",
            "permissions": "2248473465835073",
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        channels = [
            {
                "id": channel_id,
                "type": 0,
                "guild_id": FAMILY_GUILD,
                "name": name,
                "position": position,
                "permission_overwrites": [],
                "parent_id": None,
                "nsfw": False,
                "topic": None,
                "last_message_id": None,
                "rate_limit_per_user": 0,
                "flags": 0,
            }
            for position, (channel_id, name) in enumerate(self.channels.items())
        ]
        return {
            "id": FAMILY_GUILD,
            "name": "The Lins",
            "icon": None,
            "owner_id": "100000000000000001",
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": [everyone],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "vanity_url_code": None,
            "description": None,
            "banner": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": "en-US",
            "public_updates_channel_id": None,
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "joined_at": "2026-01-01T00:00:00+00:00",
            "large": False,
            "unavailable": False,
            "member_count": 3,
            "members": [],
            "channels": channels,
            "threads": [self._thread_payload(t, "thread") for t in self.threads],
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def _thread_payload(self, thread_id: str, name: str) -> dict[str, Any]:
        return {
            "id": thread_id,
            "type": 11,
            "guild_id": FAMILY_GUILD,
            "parent_id": self.threads[thread_id],
            "owner_id": "100000000000000001",
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": _now(),
                "locked": False,
                "create_timestamp": _now(),
            },
            "total_message_sent": 0,
        }

    # -- the REST API ---------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        self.calls.append(f"{request.method} {path}")
        # An interaction's response and follow-ups carry its token in the path instead.
        token_in_path = path.startswith(("/interactions/", "/webhooks/"))
        if not token_in_path and request.headers.get("Authorization") != "Bot TEST.TOKEN.discord":
            return _json(401, {"message": "401: Unauthorized", "code": 0})
        body: Any = await request.json() if request.can_read_body else None
        method = request.method
        parts = path.strip("/").split("/")
        if (method, path) == ("GET", "/users/@me"):
            return _json(200, BOT)
        if (method, path) == ("GET", "/oauth2/applications/@me"):
            return _json(200, _application())
        if (method, path) == ("GET", "/gateway/bot"):
            url = f"ws://127.0.0.1:{self.port}/gateway"
            return _json(200, {"url": url, "shards": 1, "session_start_limit": SESSION_START})
        if method == "PUT" and parts[0] == "applications" and parts[-1] == "commands":
            commands = [
                {**command, "id": "900000000000000100", "application_id": APPLICATION_ID}
                for command in body
            ]
            return _json(200, commands)
        if (method, path) == ("POST", "/users/@me/channels"):
            return _json(200, self._dm(str(body["recipient_id"])))
        if method == "GET" and parts[0] == "channels" and parts[-1] == "messages":
            return _json(200, self._history(parts[1], request.query))
        if method == "POST" and parts[0] == "channels" and parts[-1] == "messages":
            return self._post_message(parts[1], body)
        if method == "POST" and parts[0] == "interactions" and parts[-1] == "callback":
            return self._callback(parts[1], body)
        if method == "POST" and parts[0] == "webhooks":
            message = self._message(self._interaction_channel(parts[2]), body)
            return _json(200, message)
        return _json(404, {"message": "404: Not Found", "code": 0})

    def _post_message(self, channel_id: str, body: dict[str, Any]) -> web.Response:
        if self.rate_limit:
            self.rate_limit -= 1
            return _json(
                429,
                {
                    "message": "You are being rate limited.",
                    "retry_after": self.retry_after,
                    "global": False,
                },
                {
                    "Via": "1.1 google",
                    "Retry-After": "1",
                    "X-RateLimit-Limit": "5",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset-After": str(self.retry_after),
                    "X-RateLimit-Bucket": "fake-bucket",
                    "X-RateLimit-Scope": "user",
                },
            )
        return _json(200, self._message(channel_id, body))

    def _message(self, channel_id: str, body: dict[str, Any]) -> dict[str, Any]:
        message_id = snowflake()
        message: dict[str, Any] = {
            "id": message_id,
            "type": 19 if body.get("message_reference") else 0,
            "channel_id": channel_id,
            "author": BOT,
            "content": body.get("content") or "",
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "flags": 0,
            "components": _components(body.get("components") or []),
        }
        if channel_id in self.channels or channel_id in self.threads:
            message["guild_id"] = FAMILY_GUILD
        if body.get("message_reference"):
            message["message_reference"] = body["message_reference"]
        self.messages[message_id] = message
        self.wire.append((channel_id, message_id))
        with self._changed:
            self.sent.append({**body, "channel_id": channel_id, "id": message_id})
            self._changed.notify_all()
        return message

    def _history(self, channel_id: str, query: Any) -> list[dict[str, Any]]:
        """A channel's messages after `after` as the REST API gives them: the oldest
        `limit` of them, newest first, without the gateway's server fields."""
        after, limit = int(query.get("after", 0)), int(query.get("limit", 50))
        found = sorted(
            (m for m in self.messages.values() if m["channel_id"] == channel_id),
            key=lambda m: int(m["id"]),
        )
        later = [m for m in found if int(m["id"]) > after][:limit]
        drop = ("guild_id", "member")
        return [{k: v for k, v in m.items() if k not in drop} for m in reversed(later)]

    def _interaction_channel(self, token: str) -> str:
        interaction_id = token.removeprefix("token-")
        for packet in reversed(self._session.events if self._session else []):
            if packet["t"] == "INTERACTION_CREATE" and packet["d"]["id"] == interaction_id:
                return str(packet["d"]["channel_id"])
        return "0"

    def _callback(self, interaction_id: str, body: dict[str, Any]) -> web.Response:
        with self._changed:
            self.callbacks.append({**body, "interaction_id": interaction_id})
            self._changed.notify_all()
        if body.get("type") == 7:  # the message with the buttons, edited
            for message in self.messages.values():
                if message["author"] is BOT and message.get("components"):
                    message["content"] = body["data"].get("content", message["content"])
        return _json(
            200,
            {
                "interaction": {
                    "id": interaction_id,
                    "type": 2,
                    "response_message_loading": body.get("type") == 5,
                    "response_message_ephemeral": False,
                },
                "resource": None,
            },
        )

    def _dm(self, user_id: str) -> dict[str, Any]:
        channel_id = self.dm_channels.setdefault(user_id, snowflake())
        return {
            "id": channel_id,
            "type": 1,
            "last_message_id": None,
            "flags": 0,
            "recipients": [user(user_id, "Someone")],
        }


def _components(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": 1,
            "id": n,
            "components": [{**c, "id": n * 10 + m} for m, c in enumerate(row["components"])],
        }
        for n, row in enumerate(rows, start=1)
    ]


def _application() -> dict[str, Any]:
    return {
        "id": APPLICATION_ID,
        "name": "Lore",
        "icon": None,
        "description": "A personal assistant with a memory",
        "summary": "",
        "type": None,
        "hook": True,
        "bot_public": False,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": 8953856,
        "owner": user("100000000000000001", "John"),
        "team": None,
        "bot": BOT,
        "redirect_uris": [],
        "interactions_endpoint_url": None,
        "install_params": {
            "scopes": ["bot", "applications.commands"],
            "permissions": "274877991936",
        },
        "integration_types_config": {"0": {}},
    }


def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON answer, its Content-Type exactly as Discord's (discord.py compares it)."""
    return web.Response(
        body=json.dumps(data).encode("utf-8"),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
