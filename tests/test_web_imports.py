"""The web page's "Import history" card, logged in as a browser is (cookie and CSRF token):
an uploaded export shows what it brought, the list undoes an import and agrees to
extraction (queued, paused; nothing sent from the page itself), a bad upload is one line
and changes nothing, and only the owner sees the card or may use its routes."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.import_job import import_ledger
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway

FIXTURES = Path(__file__).parent / "fixtures" / "import"
SCOPE = "cli:default"


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[api.clients.alice]\ntoken = "alice-token"\nscopes = ["api:alice"]\n', encoding="utf-8"
    )
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


@pytest.fixture
def page(gateway: Gateway) -> Iterator[httpx.Client]:
    with gateway.page() as client:
        client.params = client.params.set("scope", SCOPE)
        yield client


def _upload(page: httpx.Client, source: str, name: str, data: bytes) -> httpx.Response:
    return page.post("/ui/import", data={"source": source}, files={"file": (name, data)})


def _text(answer: httpx.Response) -> str:
    """The fragment's words, without its tags or spacing."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", answer.text)).split())


def test_an_uploaded_export_shows_what_it_brought_and_is_listed(
    page: httpx.Client, gateway: Gateway, model: ScriptedProvider
) -> None:
    export = (FIXTURES / "chatgpt-conversations.json").read_bytes()
    answer = _upload(page, "chatgpt", "conversations.json", export)
    assert answer.status_code == 200, answer.text
    (record,) = import_ledger(gateway.lore).records()
    shown = _text(answer)
    assert f"Imported {record.id} from chatgpt" in shown
    assert "3 conversation(s), 10 message(s)" in shown
    assert "花莲旅行计划" in shown and "Билеты на поезд" in shown
    assert "Skipped:" in shown and "A conversation whose tree was lost" in shown
    # The list, newest first, offers extraction with what it would send.
    assert f'id="import-{record.id}"' in answer.text
    assert "chatgpt · " in shown and "3 sessions, 0 notes" in shown
    assert re.search(r"sends your side of 3 conversations, about [\d,]+ tokens, to \S+", shown)
    # The page itself shows the card, and the same list.
    home = page.get("/")
    assert "at most 25 MB" in _text(home)
    assert "Import history" in home.text and f'id="import-{record.id}"' in home.text
    assert model.requests == []  # nothing sent before the owner agrees

    again = _text(_upload(page, "chatgpt", "conversations.json", export))
    assert "Nothing new imported from chatgpt" in again and "3 already imported" in again
    assert len(import_ledger(gateway.lore).records()) == 1


def test_extract_memories_queues_the_job_and_pause_stops_it(
    page: httpx.Client, gateway: Gateway, model: ScriptedProvider
) -> None:
    export = (FIXTURES / "chatgpt-conversations.json").read_bytes()
    _upload(page, "chatgpt", "conversations.json", export)
    (record,) = import_ledger(gateway.lore).records()

    queued = page.post(f"/ui/imports/{record.id}/extract")
    assert queued.status_code == 200, queued.text
    shown = _text(queued)
    assert "Extraction queued: 0 of 3 conversation(s) done, 0 memory(ies) noted." in shown
    assert "Pause" in shown and "Extract memories" not in shown
    assert 'hx-trigger="every 10s"' in queued.text  # the progress updates itself
    assert import_ledger(gateway.lore).get(record.id).extraction["state"] == "queued"
    assert model.requests == []  # lore serve's background runs it, not the request

    paused = _text(page.post(f"/ui/imports/{record.id}/pause"))
    assert "Extraction paused" in paused and "Extract memories" in paused
    assert import_ledger(gateway.lore).get(record.id).extraction["state"] == "paused"


def test_undo_removes_the_import_and_the_list_says_so(page: httpx.Client, gateway: Gateway) -> None:
    export = (FIXTURES / "mem0-memories.json").read_bytes()
    shown = _text(_upload(page, "mem0", "memories.json", export))
    assert "3 new memory(ies)" in shown
    (record,) = import_ledger(gateway.lore).records()
    lore = gateway.lore
    assert len(lore.memory.active_page(SCOPE, now=lore.clock.now(), limit=-1).memories) == 3

    undone = page.post(f"/ui/imports/{record.id}/undo")
    assert undone.status_code == 200, undone.text
    assert "· undone" in _text(undone) and "Undo" not in _text(undone)
    assert import_ledger(lore).get(record.id).undone_at is not None
    assert lore.memory.active_page(SCOPE, now=lore.clock.now(), limit=-1).memories == []


@pytest.mark.parametrize(
    ("source", "name", "data", "error"),
    [
        ("icq", "x.json", b"[]", "unknown source 'icq'"),
        ("nanobot", "USER.md", b"- a fact", "send it as a zip of that folder"),
        ("mem0", "x.json", b"not json", "not JSON, not a mem0 export"),
        ("claude", "", b"", "choose the export file to import"),
    ],
)
def test_a_bad_upload_is_one_line_and_changes_nothing(
    page: httpx.Client, gateway: Gateway, source: str, name: str, data: bytes, error: str
) -> None:
    answer = _upload(page, source, name, data)
    assert answer.status_code == 200, answer.text
    (line,) = re.findall(r'<p class="error" role="alert">([^<]*)</p>', answer.text)
    assert error in html.unescape(line) and "\n" not in line
    assert "No imports yet." in answer.text
    assert not (gateway.lore.config.home / "imports").exists()
    assert not list(gateway.lore.config.home.glob("lore-import-*"))


def test_a_member_sees_no_card_and_may_not_use_its_routes(gateway: Gateway) -> None:
    export = (FIXTURES / "mem0-memories.json").read_bytes()
    with gateway.page() as owner:
        owner.params = owner.params.set("scope", SCOPE)
        _upload(owner, "mem0", "memories.json", export)
    (record,) = import_ledger(gateway.lore).records()
    with gateway.page("alice-token") as alice:
        home = alice.get("/")
        assert home.status_code == 200 and "Import history" not in home.text
        assert alice.get("/ui/imports").status_code == 403
        assert _upload(alice, "mem0", "m.json", export).status_code == 403
        for action in ("undo", "extract", "pause"):
            assert alice.post(f"/ui/imports/{record.id}/{action}").status_code == 403
    assert import_ledger(gateway.lore).get(record.id).undone_at is None
    assert len(import_ledger(gateway.lore).records()) == 1


def test_an_upload_without_the_pages_csrf_token_is_refused(
    page: httpx.Client, gateway: Gateway
) -> None:
    page.headers.pop("X-CSRF-Token")
    export = (FIXTURES / "mem0-memories.json").read_bytes()
    answer = _upload(page, "mem0", "memories.json", export)
    assert answer.status_code == 403 and "CSRF" in answer.text
    assert not (gateway.lore.config.home / "imports").exists()
