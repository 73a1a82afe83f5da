"""Cross-site request forgery from another port of 127.0.0.1, in real headless Chromium.

Every port of a host is the same site, so SameSite=Strict still sends the log-in cookie
with a form another local server (a dev server, a notebook) auto-submits; what stops it
is the page's CSRF token and the checks of Origin and Sec-Fetch-Site.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway
from tests.test_gateway_web import ARGS, CHROMIUM

SCOPE = "api:default"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Debian's chromium (make test installs it)"
)

_FORMS = [
    ("/ui/memories", {"content": "攻击者写的 memory", "kind": "fact"}),
    ("/ui/reminders", {"text": "перевести деньги", "when": "in 5 minutes"}),
    ("/ui/memories/1/forget", {}),
]


def _attack_page(gateway_url: str) -> bytes:
    """Three forms into three frames, submitted as soon as the page loads."""
    forms = []
    for number, (path, fields) in enumerate(_FORMS):
        inputs = "".join(f'<input name="{k}" value="{v}">' for k, v in fields.items())
        forms.append(
            f'<iframe name="f{number}"></iframe>'
            f'<form target="f{number}" method="post" action="{gateway_url}{path}?scope={SCOPE}">'
            f"{inputs}</form>"
        )
    script = "<script>for (const f of document.forms) f.submit();</script>"
    return f"<!doctype html><meta charset=utf-8>{''.join(forms)}{script}".encode()


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


@pytest.fixture
def attacker(gateway: Gateway) -> Iterator[str]:
    """Another server on another port of 127.0.0.1, serving the attack page."""
    body = _attack_page(gateway.url)

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_forms_from_another_port_change_nothing_while_the_owner_is_logged_in(
    gateway: Gateway, attacker: str
) -> None:
    from playwright.sync_api import expect, sync_playwright

    lore = gateway.lore
    lore.memory.remember(
        SCOPE, "John drinks 美式咖啡", author="john", via="cli", now=lore.clock.now()
    )
    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(15_000)
        violations: list[str] = []
        page.on(
            "console",
            lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
        )
        page.goto(gateway.url)
        page.get_by_label("Token").fill(gateway.token)
        page.get_by_role("button", name="Log in").click()
        expect(page.locator("#memory-block")).to_contain_text("美式咖啡")

        answered: list[int] = []
        context.on(
            "response",
            lambda r: (
                answered.append(r.status)
                if r.request.method == "POST" and "/ui/" in r.url
                else None
            ),
        )
        attack = context.new_page()
        attack.goto(attacker)
        deadline = time.monotonic() + 15
        while len(answered) < len(_FORMS):
            assert time.monotonic() < deadline, "the forged forms were never answered"
            attack.wait_for_timeout(50)
        assert answered == [403, 403, 403]

        # The owner's own page still works, under its content security policy.
        page.reload()
        page.get_by_label("New memory").fill("John lives in 台北")
        page.get_by_role("button", name="Add").click()
        expect(page.locator("#memory-block")).to_contain_text("John lives in 台北")
        browser.close()

    contents = [
        m.content for m in lore.memory.active_page(SCOPE, now=lore.clock.now(), limit=-1).memories
    ]
    assert sorted(contents) == sorted(["John drinks 美式咖啡", "John lives in 台北"])
    assert lore.reminders.list(SCOPE) == []
    assert violations == []
