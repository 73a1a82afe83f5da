"""The web page in real headless Chromium (Debian's, driven by Playwright; no download)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime, build
from lore.sessions.closing import close_session
from tests.gateway_server import Gateway, running_gateway

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCOPE = "api:default"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Debian's chromium (make test installs it)"
)


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


@pytest.fixture
def page(gateway: Gateway) -> Iterator[object]:
    from playwright.sync_api import expect, sync_playwright

    # Assertions wait as long as actions (their own default is 5 s: too short on two
    # busy cores).
    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("dialog", lambda dialog: dialog.accept())
        yield page
        browser.close()


def _log_in(page: object, gateway: Gateway) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto(gateway.url)
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.get_by_label("Token").fill(gateway.token)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#memory-block")).to_contain_text("<long_term_memory>")


def _archive(lore: Runtime) -> str:
    lore.session(SCOPE).append(
        [
            {"role": "user", "content": "Let's plan the trip to 花蓮", "author": "john"},
            {"role": "assistant", "content": "Train on Saturday morning, then the gorge."},
        ]
    )
    entry = close_session(lore, SCOPE)
    assert entry is not None
    note = lore.config.workspace / "memory" / "2026-11-30-1700-trip.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Trip to Hualien\nTrain on Saturday; the gorge after.\n", encoding="utf-8")
    archive = lore.sessions.archive
    archive.link_summary(
        entry.session_id,
        note.relative_to(lore.config.home).as_posix(),
        "trip-to-hualien",
        "written",
    )
    return entry.session_id


def test_a_wrong_token_is_refused(page: object, gateway: Gateway) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto(gateway.url)
    page.get_by_label("Token").fill("not-the-token")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_have_text("That token is not valid.")


def test_memories_reminders_sessions_and_chat_in_the_browser(
    page: object, gateway: Gateway, model: ScriptedProvider
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    session_id = _archive(gateway.lore)
    _log_in(page, gateway)
    block = page.locator("#memory-block")

    # Add a memory and see it in the block exactly as the model will.
    page.get_by_label("New memory").fill("John lives in Hualien 花蓮")
    page.get_by_role("button", name="Add").click()
    expect(block).to_contain_text("#1 [fact] John lives in Hualien 花蓮 (noted by john")
    # Its details: the history of changes.
    page.locator("#memory-1").get_by_role("button", name="details").click()
    expect(page.locator("#memory-1 .history")).to_contain_text("add by john via api")
    # Edit it: a new version replaces it in the block.
    page.get_by_label("Edit #1").fill("John lives in Taipei")
    page.get_by_role("button", name="Save").click()
    expect(block).to_contain_text("#2 [fact] John lives in Taipei")
    expect(block).not_to_contain_text("Hualien 花蓮")
    # Forget it.
    page.locator("#memory-2").get_by_role("button", name="forget").click()
    expect(block).not_to_contain_text("Taipei")
    expect(page.locator("#memories")).to_contain_text("No memories in this conversation yet.")

    # A refused memory says why, in place.
    page.get_by_label("New memory").fill("my password is hunter2-Secret!")
    page.get_by_role("button", name="Add").click()
    expect(page.locator("#memories .error")).to_contain_text("password")

    # Set a reminder, then cancel it.
    page.get_by_label("Reminder text").fill("call mum")
    page.get_by_label("When").fill("in 20 minutes")
    page.get_by_role("button", name="Set").click()
    reminders = page.locator("#reminders")
    expect(reminders).to_contain_text("call mum")
    reminders.get_by_role("button", name="cancel").click()
    expect(reminders).to_contain_text("No pending reminders.")

    # Send a chat message and see the reply stream in.
    model.step(Step(text="Hello John! Saturday's train leaves at 8.", delay=0.3, chunk_size=4))
    page.get_by_placeholder("Message Lore").fill("When is the train?")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg.assistant.streaming")).to_have_count(1)
    reply = page.locator(".msg.assistant").last
    expect(reply).to_have_text("Hello John! Saturday's train leaves at 8.")
    expect(page.locator(".msg.streaming")).to_have_count(0)
    assert gateway.lore.session(SCOPE).messages[0]["content"] == "When is the train?"

    screenshot = os.environ.get("LORE_SCREENSHOT")
    if screenshot:
        page.get_by_label("New memory").fill("John takes the train to Hualien on Saturdays")
        page.get_by_role("button", name="Add").click()
        expect(block).to_contain_text("Saturdays")
        page.screenshot(path=screenshot, full_page=True)

    # Read the archived transcript, and go from its summary back to it.
    page.locator("#sessions").get_by_role("link", name="summary").click()
    expect(page.locator("pre.summary")).to_contain_text("Train on Saturday")
    page.get_by_role("link", name="Read the transcript").click()
    expect(page.locator(".transcript")).to_contain_text("Let's plan the trip to 花蓮")
    expect(page.locator(".transcript")).to_contain_text(
        "Train on Saturday morning, then the gorge."
    )
    assert session_id in page.url


def test_a_phone_sized_screen_shows_one_column(page: object, gateway: Gateway) -> None:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.set_viewport_size({"width": 390, "height": 844})
    _log_in(page, gateway)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing forces sideways scrolling


def test_chromium_is_debians() -> None:
    assert shutil.which("chromium") == CHROMIUM
