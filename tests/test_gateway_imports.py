"""Imports over REST: an export uploaded to `POST /api/import` is imported as `lore import`
imports it (a workspace as a zip of its folder), listed by `GET /api/imports` and undone
by `POST /api/imports/{id}/undo`; only the owner's token may, and a bad upload (an
unknown source, a folder source sent unzipped, a zip reaching outside its folder) is one
line and changes nothing."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
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
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.close()


@pytest.fixture
def http(gateway: Gateway) -> Iterator[httpx.Client]:
    with gateway.client() as client:
        client.params = client.params.set("scope", SCOPE)
        yield client


def _zipped(folder: Path) -> bytes:
    """`folder` as a zip holding that folder, as a file manager makes one."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
    return buffer.getvalue()


def _upload(http: httpx.Client, source: str, name: str, data: bytes, **form: str) -> httpx.Response:
    return http.post("/api/import", data={"source": source, **form}, files={"file": (name, data)})


def test_an_uploaded_chatgpt_export_is_imported_listed_and_undone(
    http: httpx.Client, gateway: Gateway
) -> None:
    export = (FIXTURES / "chatgpt-conversations.json").read_bytes()
    dry = _upload(http, "chatgpt", "conversations.json", export, dry_run="true")
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True and dry.json()["conversations"] == 3
    assert http.get("/api/imports").json() == {"imports": []}

    done = _upload(http, "chatgpt", "conversations.json", export)
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["conversations"] == 3 and body["messages"] == 10 and body["id"]
    assert "花莲旅行计划" in body["titles"]
    hits = http.get("/api/search", params={"q": "Taiwanese passport"})
    assert "visa-free" in hits.text, hits.text
    again = _upload(http, "chatgpt", "conversations.json", export).json()
    assert again["id"] is None and again["already_imported"] == 3

    (listed,) = http.get("/api/imports").json()["imports"]
    assert listed["id"] == body["id"] and listed["source"] == "chatgpt"
    undone = http.post(f"/api/imports/{body['id']}/undo")
    assert undone.status_code == 200, undone.text
    assert undone.json()["sessions_removed"] == 3
    assert "visa-free" not in http.get("/api/search", params={"q": "passport"}).text
    # Nothing of the upload stays in the home.
    assert not list(gateway.lore.config.home.glob("lore-import-*"))


def test_a_zipped_nanobot_workspace_and_a_mem0_export_bring_memories(http: httpx.Client) -> None:
    nanobot = _upload(http, "nanobot", "nanobot.zip", _zipped(FIXTURES / "nanobot"))
    assert nanobot.status_code == 200, nanobot.text
    assert nanobot.json()["memories_new"] == 5 and nanobot.json()["notes"] == 4
    mem0 = _upload(http, "mem0", "memories.json", (FIXTURES / "mem0-memories.json").read_bytes())
    assert mem0.json()["memories_new"] == 3
    contents = {m["content"] for m in http.get("/api/memories").json()["memories"]}
    assert {"女儿小雨在读三年级", "Живёт в Санкт-Петербурге с 2019 года"} <= contents


@pytest.mark.parametrize(
    ("source", "name", "data", "error"),
    [
        ("icq", "x.json", b"[]", "unknown source 'icq'"),
        ("nanobot", "USER.md", b"- a fact", "send it as a zip of that folder"),
        ("mem0", "x.json", b"not json", "not JSON, not a mem0 export"),
    ],
)
def test_a_bad_upload_is_one_line_and_changes_nothing(
    http: httpx.Client, gateway: Gateway, source: str, name: str, data: bytes, error: str
) -> None:
    answer = _upload(http, source, name, data)
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert error in message and "\n" not in message
    assert not (gateway.lore.config.home / "imports").exists()


def test_a_zip_reaching_outside_its_folder_writes_nothing(
    http: httpx.Client, gateway: Gateway
) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("vault/note.md", "# a note")
        archive.writestr("../../escaped.md", "# outside")
    answer = _upload(http, "markdown", "vault.zip", buffer.getvalue())
    assert answer.status_code == 400 and "unsafe path" in answer.json()["error"]["message"]
    home = gateway.lore.config.home
    assert not list(home.parent.rglob("escaped.md"))
    assert not (home / "imports").exists()


def test_only_the_owners_token_may_import(gateway: Gateway) -> None:
    with gateway.client("alice-token") as alice:
        export = (FIXTURES / "mem0-memories.json").read_bytes()
        answer = _upload(alice, "mem0", "m.json", export)
        assert answer.status_code == 403
        assert alice.get("/api/imports").status_code == 403


def test_imported_sessions_show_their_title_and_source_on_the_api_and_the_page(
    http: httpx.Client, gateway: Gateway
) -> None:
    export = (FIXTURES / "chatgpt-conversations.json").read_bytes()
    assert _upload(http, "chatgpt", "conversations.json", export).status_code == 200
    archived = http.get("/api/sessions").json()["archived"]
    shown = {s["title"]: s["source"] for s in archived}
    assert shown == {
        "Visa for the Japan trip": "chatgpt",
        "花莲旅行计划": "chatgpt",
        "Билеты на поезд": "chatgpt",
    }
    with gateway.page() as page:
        listed = page.get("/ui/sessions", params={"scope": SCOPE})
    assert listed.status_code == 200, listed.text
    assert "花莲旅行计划, imported from chatgpt" in listed.text
