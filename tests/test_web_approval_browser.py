"""Approve and Deny on the web page, clicked in real headless Chromium (Debian's)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "code" / "garden"
    root.mkdir(parents=True)
    (root / "TODO.md").write_text("- buy seeds\n", encoding="utf-8")
    return root


@pytest.fixture
def gateway(
    config: Config, model: ScriptedProvider, clock: FixedClock, project: Path
) -> Iterator[Gateway]:
    tools = replace(config.tools, projects=(str(project),))
    lore = build(replace(config, owner_scopes=(SCOPE,), tools=tools), provider=model, clock=clock)
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
        page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
        page.set_default_timeout(15_000)
        yield page
        browser.close()


def test_the_owner_picks_a_project_approves_one_write_and_denies_another(
    page: object, gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto(gateway.url)
    page.get_by_label("Token").fill(gateway.token)
    page.get_by_role("button", name="Log in").click()
    page.get_by_label("Project").select_option(str(project))

    todo = project / "TODO.md"
    model.tool_call("write_file", {"path": "TODO.md", "content": "- buy seeds\n- 澆水\n"})
    model.reply("Added watering.")
    page.get_by_placeholder("Message Lore").fill("add watering to my todo")
    page.get_by_role("button", name="Send").click()
    question = page.get_by_role("group", name="Approval")
    expect(question).to_contain_text("write_file wants to overwrite TODO.md")
    expect(question.locator("pre.diff .add")).to_contain_text("+- 澆水")
    assert todo.read_text(encoding="utf-8") == "- buy seeds\n"  # the turn waits
    question.get_by_role("button", name="Approve").click()
    expect(question).to_contain_text("Approved by john (web page)")
    expect(page.locator(".msg.assistant").last).to_have_text("Added watering.")
    assert todo.read_text(encoding="utf-8") == "- buy seeds\n- 澆水\n"

    model.tool_call("exec", {"command": "rm TODO.md"}).reply("I left it alone.")
    page.get_by_placeholder("Message Lore").fill("delete the todo")
    page.get_by_role("button", name="Send").click()
    second = page.get_by_role("group", name="Approval").last
    expect(second).to_contain_text("rm TODO.md")
    second.get_by_role("button", name="Deny").click()
    expect(second).to_contain_text("Denied by john (web page)")
    expect(page.locator(".msg.assistant").last).to_have_text("I left it alone.")
    assert todo.exists()
    decisions = [m["decision"] for m in gateway.lore.session(SCOPE).messages if m["role"] == "tool"]
    assert [d["outcome"] for d in decisions] == ["approved", "refused"]
    assert gateway.lore.session(SCOPE).meta.extra["project"] == str(project)


def test_a_question_survives_a_reload_and_can_still_be_approved(
    page: object, gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto(gateway.url)
    page.get_by_label("Token").fill(gateway.token)
    page.get_by_role("button", name="Log in").click()
    page.get_by_label("Project").select_option(str(project))
    model.tool_call("write_file", {"path": "TODO.md", "content": "- 種番茄\n"}).reply("Done.")
    page.get_by_placeholder("Message Lore").fill("replace my todo")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("group", name="Approval")).to_contain_text("overwrite TODO.md")

    page.reload()
    question = page.get_by_role("group", name="Approval")
    expect(question).to_contain_text("write_file wants to overwrite TODO.md")
    expect(page.get_by_label("Project")).to_have_value(str(project))
    question.get_by_role("button", name="Approve").click()
    expect(question).to_contain_text("Approved by john (web page)")
    deadline = time.monotonic() + 15
    while (project / "TODO.md").read_text(encoding="utf-8") != "- 種番茄\n":
        assert time.monotonic() < deadline, "the approved write never happened"
        time.sleep(0.05)
