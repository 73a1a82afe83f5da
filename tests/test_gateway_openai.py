"""The OpenAI-compatible chat API, driven by the real `openai` package over 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


@pytest.fixture
def client(gateway: Gateway) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.token, max_retries=0) as c:
        yield c


def _user_lines(gateway: Gateway, scope: str) -> list[str]:
    session = gateway.lore.session(scope)
    return [str(m["content"]) for m in session.messages if m["role"] == "user"]


def test_a_reply_comes_back_in_openais_shape(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.reply("Hualien is on the east coast.")
    completion = client.chat.completions.create(
        model="lore", messages=[{"role": "user", "content": "Where is Hualien?"}], user="alice"
    )
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Hualien is on the east coast."
    assert completion.choices[0].finish_reason == "stop"
    assert _user_lines(gateway, "api:alice") == ["Where is Hualien?"]


def test_a_streamed_reply_arrives_in_chunks_and_ends(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.reply("我住在花蓮，每天早上喝美式咖啡。")
    stream = client.chat.completions.create(
        model="lore",
        messages=[{"role": "user", "content": "你好"}],
        stream=True,
        user="bob",
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "我住在花蓮，每天早上喝美式咖啡。"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len([c for c in chunks if c.choices[0].delta.content]) > 1
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert _user_lines(gateway, "api:bob") == ["你好"]


def test_only_the_new_user_message_enters_the_session(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.reply("Привет!").reply("Хорошо, спасибо.")
    history: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Привет"}]
    first = client.chat.completions.create(model="lore", messages=history, user="ivan")
    history += [
        {"role": "assistant", "content": first.choices[0].message.content or ""},
        {"role": "user", "content": "Как дела?"},
    ]
    client.chat.completions.create(model="lore", messages=history, user="ivan")
    assert _user_lines(gateway, "api:ivan") == ["Привет", "Как дела?"]
    # The model saw Lore's own history once, not the client's copy on top of it.
    sent = [m["content"] for m in model.requests[-1].messages if m["role"] == "user"]
    assert sent == ["Привет", "Как дела?"]


def test_the_session_header_picks_the_scope(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.reply("ok")
    client.chat.completions.create(
        model="lore",
        messages=[{"role": "user", "content": "hello"}],
        extra_headers={"X-Lore-Session": "api:team"},
        user="carol",
    )
    assert _user_lines(gateway, "api:team") == ["hello"]
    message = gateway.lore.session("api:team").messages[0]
    assert message["author"] == "carol"


def test_no_user_field_goes_to_api_default(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.reply("ok")
    client.chat.completions.create(model="lore", messages=[{"role": "user", "content": "hi"}])
    assert _user_lines(gateway, "api:default") == ["hi"]


def test_tool_calls_stay_hidden_and_their_work_is_done(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.tool_call("remember", {"content": "Dana lives in Tainan"}).reply("Noted, Tainan.")
    completion = client.chat.completions.create(
        model="lore", messages=[{"role": "user", "content": "I live in Tainan"}], user="dana"
    )
    message = completion.choices[0].message
    assert message.content == "Noted, Tainan." and not message.tool_calls
    now = gateway.lore.clock.now()
    assert [m.content for m in gateway.lore.memory.active("api:dana", now=now)] == [
        "Dana lives in Tainan"
    ]


def test_text_parts_are_read_like_a_plain_message(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    model.reply("ok")
    client.chat.completions.create(
        model="lore",
        messages=[{"role": "user", "content": [{"type": "text", "text": "parts work"}]}],
        user="erin",
    )
    assert _user_lines(gateway, "api:erin") == ["parts work"]


def test_models_lists_lore(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["lore"]


def test_a_last_message_not_from_the_user_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="lore", messages=[{"role": "assistant", "content": "hi"}], user="x"
        )
    assert refused.value.status_code == 400
    body = refused.value.response.json()
    assert body["error"]["message"] == "the last message must be the user's (role 'user')"


def test_no_messages_is_a_clear_422(gateway: Gateway) -> None:
    with gateway.client() as http:
        reply = http.post("/v1/chat/completions", json={"model": "lore", "messages": []})
    assert reply.status_code == 422
    assert reply.json()["error"]["message"].startswith("messages:")


def test_a_model_failure_is_a_502_with_its_reason(
    client: openai.OpenAI, model: ScriptedProvider
) -> None:
    from lore.errors import ProviderServerError

    model.fail(ProviderServerError("upstream is down", status=400))
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(
            model="lore", messages=[{"role": "user", "content": "hi"}], user="x"
        )
    assert failed.value.status_code == 502
    assert "upstream is down" in failed.value.response.json()["error"]["message"]


def test_a_streamed_failure_ends_with_an_error_event_and_done(
    gateway: Gateway, model: ScriptedProvider
) -> None:
    from lore.errors import BadRequestError

    model.fail(BadRequestError("refused", status=400))
    body = {"model": "lore", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with gateway.client() as http, http.stream("POST", "/v1/chat/completions", json=body) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    assert json.loads(lines[-2].removeprefix("data: "))["error"]["message"] == "refused"


def test_a_slash_command_answers_as_the_reply(
    client: openai.OpenAI, gateway: Gateway, model: ScriptedProvider
) -> None:
    completion = client.chat.completions.create(
        model="lore", messages=[{"role": "user", "content": "/status"}], user="frank"
    )
    assert "api:frank" in (completion.choices[0].message.content or "")
    assert model.requests == []


def test_an_unknown_command_is_a_400(client: openai.OpenAI, model: ScriptedProvider) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="lore", messages=[{"role": "user", "content": "/hepl"}], user="x"
        )
    assert "/help" in refused.value.response.json()["error"]["message"]
    assert model.requests == []


def test_a_client_may_not_chat_in_another_scope(gateway: Gateway) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    headers = {"X-Lore-Session": "cli:default"}
    with gateway.client() as http:
        owner = http.post("/v1/chat/completions", json=body, headers={"X-Lore-Session": "x:y"})
    assert owner.status_code in (200, 502)  # the owner may; no reply was queued
    with httpx.Client(base_url=gateway.url, timeout=10) as http:
        anonymous = http.post("/v1/chat/completions", json=body, headers=headers)
    assert anonymous.status_code == 401
