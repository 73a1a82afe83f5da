"""One detector guards every way a memory is written: the remember tool, extraction after a
turn, `/remember`, `lore memory add` and `lore memory import`. Each refuses the same
secrets (a Chinese resident ID, an IBAN, a US social security number, a door code, a
Russian passport, a login with its password, a named key, a wallet recovery phrase) and
stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main
from lore.clock import FixedClock
from lore.config import load_config
from lore.core.tools import ToolContext
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.runtime import Runtime, build

HOME = "cli:default"
SECRETS = [
    "爸爸的身份证号 11010519491231002X",
    "rent goes to IBAN DE89 3704 0044 0532 0130 00",
    "Amy's SSN is 078-05-1120",
    "The door code is 4821",
    "серия 4510 номер 123456",
    "wifi: SSID Home, password CoffeeTime99",
    # a login with its password, a named key of no known shape, a BIP-39 recovery phrase
    "my bank login is john / Sunshine2024",
    "银行登录：amy@mail.com / Tulip2024",
    "логин от банка john / Zima2024",
    "API key for Acme: 8f3kd93jd8s7f6g5a1",
    "Acme的API密钥是 8f3kd93jd8s7f6g5a1",
    "токен бота — 8f3kd93jd8s7f6g5a1",
    "host reason upset hover race busy scheme venue educate design reduce spoon",
    "我的钱包助记词：host reason upset hover race busy scheme venue educate design reduce spoon",
    "сид-фраза: host reason upset hover race busy scheme venue educate design reduce spoon",
]


def _context(lore: Runtime) -> ToolContext:
    return ToolContext(
        scope=HOME, author="John", session_id="s-1", message_index=0,
        now=lore.clock.now(), timezone="Asia/Taipei",
    )  # fmt: skip


@pytest.mark.parametrize("text", SECRETS)
async def test_the_remember_tool_refuses_it(lore: Runtime, text: str) -> None:
    call = ToolCall("c1", "remember", json.dumps({"content": text}))
    result = await lore.tools.call(call, _context(lore))
    assert result.is_error and "password manager" in result.content
    assert lore.memory.active(HOME, now=lore.clock.now()) == []


@pytest.mark.parametrize("text", SECRETS)
async def test_the_remember_command_refuses_it(lore: Runtime, text: str) -> None:
    conversation = lore.conversation(HOME, emit=lambda event: None, author="John")
    outcome = await conversation.send(f"/remember {text}")
    assert outcome.command is not None and not outcome.ok
    assert "password manager" in outcome.command.text
    assert lore.memory.active(HOME, now=lore.clock.now()) == []


@pytest.mark.parametrize("text", SECRETS)
async def test_extraction_drops_it(
    home: Path, model: ScriptedProvider, clock: FixedClock, text: str
) -> None:
    def answer(request: ChatRequest) -> Step:
        if request.system == EXTRACTION_PROMPT:
            return Step(text=json.dumps([{"op": "add", "content": text}]))
        return Step(text="ok")

    model.default = answer
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei"},
    )
    lore = build(config, provider=model, clock=clock)
    try:
        await lore.conversation(HOME, emit=lambda event: None).send(text)
        await lore.background.drain()
        assert lore.memory.active(HOME, now=clock.now()) == []
    finally:
        await lore.aclose()


@pytest.mark.parametrize("text", SECRETS)
def test_memory_add_refuses_it(capsys: pytest.CaptureFixture[str], text: str) -> None:
    assert main(["memory", "add", text]) == 1
    assert "password manager" in capsys.readouterr().err
    assert main(["memory", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize("text", SECRETS)
def test_memory_import_refuses_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    record = {"content": text, "author": "john", "created_at": "2026-11-30T09:00:00+00:00"}
    dump = tmp_path / "in.jsonl"
    dump.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["memory", "import", str(dump)]) == 1
    assert "password manager" in capsys.readouterr().err
    assert main(["memory", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
