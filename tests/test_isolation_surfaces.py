"""Isolation on every surface: two groups and a 1:1 chat, each with a word said, noted and
set as a reminder only there; no other conversation sees that word in its prompt, its
memory_search, `lore memory list --scope`, `lore remind list --scope`, the web page or
the REST and OpenAI-compatible API with a token for that conversation alone.

Telegram chats are driven through the fake Bot API on 127.0.0.1; a chat of a channel
without a fake here goes straight to the bus, as its channel would hand it over. Adding
a channel's conversations is one more line in CHATS.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace

import httpx
import pytest

from lore.channels.telegram import TelegramChannel
from lore.cli import main
from lore.clock import FixedClock
from lore.config import ApiClientConfig, ApiConfig, Config, TelegramConfig
from lore.events import Inbound, Trust
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.runtime import Runtime, build
from lore.sessions.closing import close_session
from tests.gateway_server import OWNER_TOKEN, gateway_in_loop
from tests.telegram_server import BOT_USERNAME, FakeTelegram


@dataclass(frozen=True)
class Chat:
    scope: str
    channel: str
    author: str
    author_id: str
    trust: Trust
    words: tuple[str, ...]  # said, noted and set as a reminder here, and nowhere else

    @property
    def token(self) -> str:
        return f"token-{self.author_id}"


CHATS = [
    Chat("telegram:-1001", "telegram", "Mom", "222", "member", ("aubergine", "баклажан")),
    Chat("telegram:-1002", "telegram", "Olga", "333", "member", ("zeppelin", "飞艇")),
    Chat("telegram:111", "telegram", "John", "111", "owner", ("marmalade", "果酱")),
    # LINE: Chat("line:group:C1", "line", "Mei", "U222", "member", ("lantern", "灯笼")),
]


def _others(chat: Chat) -> list[str]:
    return [word for other in CHATS if other is not chat for word in other.words]


def _clean(chat: Chat, text: str) -> None:
    """`text` has `chat`'s own words (it is not empty by accident) and nobody else's."""
    assert any(word in text for word in chat.words), (chat.scope, text[:300])
    leaked = [word for word in _others(chat) if word in text]
    assert not leaked, f"{chat.scope} sees {leaked}"


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


class Talk:
    """Saying something in a chat and waiting until Lore answered."""

    def __init__(self, lore: Runtime, fake: FakeTelegram) -> None:
        self.lore = lore
        self.fake = fake

    async def say(self, chat: Chat, text: str) -> None:
        if chat.channel != "telegram":
            await self.lore.bus.send(
                Inbound(chat.scope, chat.channel, chat.author, text, chat.trust, "", chat.author_id)
            )
            await self.lore.background.drain()
            return
        chat_id = int(chat.scope.split(":", 1)[1])
        kind = "private" if chat_id > 0 else "supergroup"
        mention = "" if kind == "private" else f"@{BOT_USERNAME} "
        before = len(self.fake.sent)
        self.fake.say(
            mention + text,
            chat={"id": chat_id, "type": kind},
            sender={"id": int(chat.author_id), "is_bot": False, "first_name": chat.author},
        )
        await asyncio.to_thread(self.fake.wait_sent, before + 1)
        await self.lore.background.drain()


@pytest.fixture
async def world(
    config: Config, model: ScriptedProvider, clock: FixedClock, fake: FakeTelegram
) -> AsyncIterator[tuple[Runtime, Talk]]:
    """Each chat: a word noted and set as a reminder, that session closed (archived and
    indexed), then the word said again in a live session."""
    clients = {
        f"c{n}": ApiClientConfig(token=chat.token, scopes=(chat.scope,))
        for n, chat in enumerate(CHATS)
    }
    settings = TelegramConfig(
        token="123:TEST", base_url=fake.base_url, owner_ids=("111",), poll_seconds=1
    )
    config = replace(config, telegram=settings, api=ApiConfig(token=OWNER_TOKEN, clients=clients))
    lore = build(config, provider=model, clock=clock)
    channel = TelegramChannel(lore, settings)
    task = asyncio.create_task(channel.run_forever())
    talk = Talk(lore, fake)
    try:
        for chat in CHATS:
            first, second = chat.words
            model.tool_call("remember", {"content": f"The password word is {first} / {second}"})
            model.tool_call("set_reminder", {"text": f"buy {first}", "when": "tomorrow 9am"})
            model.reply(f"Noted {first}.")
            await talk.say(chat, f"remember {first} ({second}) and remind me tomorrow")
            close_session(lore, chat.scope)
            model.reply(f"Yes, {second}.")
            await talk.say(chat, f"{second}, once more")
        yield lore, talk
    finally:
        channel.stop()
        await asyncio.wait_for(task, timeout=10)
        await lore.aclose()


async def test_no_chat_sees_anothers_words_in_its_prompt(
    world: tuple[Runtime, Talk], model: ScriptedProvider
) -> None:
    lore, talk = world
    for chat in CHATS:
        model.reply("Hm.")
        before = len(model.requests)
        await talk.say(chat, "what do you know?")
        request = model.requests[before]
        _clean(chat, request.system + json.dumps(request.messages, ensure_ascii=False))
        inbound = Inbound(chat.scope, chat.channel, chat.author, "", chat.trust)
        _clean(chat, lore.bus.system_prompt(inbound))


async def test_memory_search_in_a_chat_finds_only_that_chats_words(
    world: tuple[Runtime, Talk], model: ScriptedProvider
) -> None:
    lore, talk = world
    for chat in CHATS:
        queries = [*chat.words, *_others(chat)]
        model.tool_calls([("memory_search", {"query": q}) for q in queries]).reply("Done.")
        await talk.say(chat, "search, please")
        results = lore.session(chat.scope).messages[-len(queries) - 1 : -1]
        assert [m["role"] for m in results] == ["tool"] * len(queries)
        # What was found, without the query each result repeats.
        found = [
            content_text(m["content"]).replace(q, "") for m, q in zip(results, queries, strict=True)
        ]
        _clean(chat, "\n".join(found))


async def test_lore_memory_list_and_remind_list_show_only_the_scope_asked_for(
    world: tuple[Runtime, Talk], capsys: pytest.CaptureFixture[str]
) -> None:
    lore, _ = world
    home = str(lore.config.home)
    for chat in CHATS:
        for command in (["memory", "list"], ["remind", "list"]):
            args = [*command, "--scope", chat.scope, "--home", home, "--json"]
            assert await asyncio.to_thread(main, args) == 0
            _clean(chat, capsys.readouterr().out)


async def test_a_token_for_one_chat_sees_only_that_chat_on_the_web_page_and_the_apis(
    world: tuple[Runtime, Talk], model: ScriptedProvider
) -> None:
    lore, _ = world
    async with gateway_in_loop(lore) as url:
        for chat in CHATS:
            headers = {"Authorization": f"Bearer {chat.token}"}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
                await _only_its_own(http, chat, model)


def _text(reply: httpx.Response) -> str:
    """The answer as text, JSON with its non-ASCII characters as themselves."""
    if reply.headers.get("content-type", "").startswith("application/json"):
        return json.dumps(reply.json(), ensure_ascii=False)
    return reply.text


async def _only_its_own(http: httpx.AsyncClient, chat: Chat, model: ScriptedProvider) -> None:
    mine = {"scope": chat.scope}
    seen: list[str] = []
    for path in (
        "/",
        "/ui/memories",
        "/ui/sessions",
        "/api/scopes",
        "/api/memories",
        "/api/memories/block",
        "/api/memories/export",
        "/api/reminders",
        "/api/sessions",
        "/api/sessions/live",
    ):
        reply = await http.get(path, params=mine)
        assert reply.status_code == 200, (path, reply.text)
        seen.append(_text(reply))
    archived = (await http.get("/api/sessions", params=mine)).json()["archived"]
    assert archived
    for entry in archived:
        reply = await http.get(f"/api/sessions/{entry['session_id']}", params=mine)
        seen.append(_text(reply))
    for query in [*chat.words, *_others(chat)]:
        found = await http.get("/api/search", params={**mine, "q": query})
        memories = await http.post("/api/memories/search", params=mine, json={"query": query})
        page = await http.get("/ui/search", params={**mine, "q": query})
        # What was found, without the query an answer repeats.
        seen += [_text(reply).replace(query, "") for reply in (found, memories, page)]
    _clean(chat, "\n".join(seen))
    # A chat through the OpenAI-compatible API: the model gets this chat's context only.
    model.reply("Sure.")
    before = len(model.requests)
    body = {"model": "lore", "messages": [{"role": "user", "content": "what do you know?"}]}
    session = {"X-Lore-Session": chat.scope}
    reply = await http.post("/v1/chat/completions", json=body, headers=session)
    assert reply.status_code == 200, reply.text
    request = model.requests[before]
    _clean(chat, request.system + json.dumps(request.messages, ensure_ascii=False))
    # Every other chat is closed to this token, on every route, whether or not it exists.
    for other in CHATS:
        if other is chat:
            continue
        theirs = {"scope": other.scope}
        for method, path in (
            ("GET", "/"),
            ("GET", "/api/memories"),
            ("GET", "/api/reminders"),
            ("GET", "/api/sessions"),
            ("GET", "/api/search?q=x"),
        ):
            refused = await http.request(method, path, params=theirs)
            assert refused.status_code == 403, (chat.scope, method, path)
            assert not any(word in _text(refused) for word in other.words)
        headers = {"X-Lore-Session": other.scope}
        refused = await http.post("/v1/chat/completions", json=body, headers=headers)
        assert refused.status_code == 403
