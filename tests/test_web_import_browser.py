"""Importing history from the web page in real headless Chromium: choose the source and
the file, see what it brought, agree to extraction, undo it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.import_job import import_ledger
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway
from tests.test_gateway_web import ARGS, CHROMIUM

EXPORT = Path(__file__).parent / "fixtures" / "import" / "chatgpt-conversations.json"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Debian's chromium (make test installs it)"
)


@pytest.fixture
def config(home: Path) -> Config:
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "UTC"},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.close()


def test_an_export_uploaded_on_the_page_is_imported_queued_and_undone(
    gateway: Gateway, model: ScriptedProvider
) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.set_default_timeout(15_000)
        page.goto(gateway.url)
        page.get_by_label("Token").fill(gateway.token)
        page.get_by_role("button", name="Log in").click()
        card = page.locator("#imports")
        expect(card).to_contain_text("No imports yet.")

        page.get_by_label("From").select_option("chatgpt")
        page.get_by_label("Export file").set_input_files(str(EXPORT))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(card.get_by_role("status")).to_contain_text("3 conversation(s), 10 message(s)")
        expect(card).to_contain_text("花莲旅行计划")
        (record,) = import_ledger(gateway.lore).records()
        expect(card.get_by_role("status")).to_contain_text(f"Imported {record.id}")
        expect(card).to_contain_text("sends your side of 3 conversations")

        card.get_by_role("button", name="Extract memories").click()
        expect(card).to_contain_text("Extraction queued: 0 of 3 conversation(s) done")
        ledger = import_ledger(gateway.lore)
        assert ledger.get(record.id).extraction["state"] == "queued"
        # lore serve's background finishes one conversation: the card follows by itself.
        progressed = ledger.get(record.id)
        progressed.extraction.update(done=[record.sessions[0]["session_id"]], notes=2)
        ledger.save(progressed)
        expect(card).to_contain_text("1 of 3 conversation(s) done, 2 memory(ies) noted")
        card.get_by_role("button", name=f"Pause extraction of {record.id}").click()
        expect(card).to_contain_text("Extraction paused")
        expect(card.get_by_role("button", name="Extract memories")).to_be_visible()

        card.get_by_role("button", name=f"Undo import {record.id}").click()
        expect(card).to_contain_text("undone")
        assert import_ledger(gateway.lore).get(record.id).undone_at is not None
        assert model.requests == []
        browser.close()
