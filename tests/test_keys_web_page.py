"""The web page's chat script sends its conversation's key in any script: `X-Lore-Session`
goes out percent-encoded (a raw 日本語 is no header value a browser will send), and the
gateway reads it back as the key. chat.js runs in Node against the real gateway."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import lore.channels.http
from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import CSRF_HEADER, Gateway, running_gateway

NODE = shutil.which("node")
HARNESS = Path(__file__).parent / "fixtures" / "web" / "chat_harness.js"

pytestmark = pytest.mark.skipif(NODE is None, reason="needs Node.js to run chat.js")


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


@pytest.mark.parametrize("scope", ["api:日本語", "api:Привет мир", "api:👨‍👩‍👧 team@home"])
def test_the_pages_chat_speaks_in_a_conversation_named_in_any_script(
    gateway: Gateway, model: ScriptedProvider, scope: str
) -> None:
    assert NODE is not None
    model.reply("こんにちは")
    with gateway.page() as page:
        cookie = "; ".join(f"{name}={value}" for name, value in page.cookies.items())
        csrf = page.headers[CSRF_HEADER]
    script = Path(lore.channels.http.__file__).parent / "static" / "chat.js"
    args = [NODE, str(HARNESS), gateway.url, cookie, csrf, scope, "hi", str(script)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == ["hi", "こんにちは"], done.stdout
    messages = gateway.lore.session(scope).messages
    assert [m["content"] for m in messages] == ["hi", "こんにちは"]
