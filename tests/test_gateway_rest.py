"""The memory REST API: every endpoint's status codes, scope enforcement and bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.ports.sessions import ArchivedSession
from lore.runtime import Runtime, build
from lore.sessions.closing import close_session
from tests.gateway_server import Gateway, running_gateway

SCOPE = "api:alice"


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[api.clients.alice]\ntoken = "alice-token"\nscopes = ["api:alice"]\n', encoding="utf-8"
    )
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


@pytest.fixture
def http(gateway: Gateway) -> Iterator[httpx.Client]:
    with gateway.client() as client:
        client.params = client.params.set("scope", SCOPE)
        yield client


@pytest.fixture
def alice(gateway: Gateway) -> Iterator[httpx.Client]:
    with gateway.client("alice-token") as client:
        yield client


def _add(http: httpx.Client, content: str, **fields: object) -> dict[str, object]:
    reply = http.post("/api/memories", json={"content": content, **fields})
    assert reply.status_code == 201, reply.text
    return dict(reply.json())


# -- memories ---------------------------------------------------------------------------


def test_add_then_list_returns_the_cli_json_record(http: httpx.Client) -> None:
    added = _add(http, "Alice lives in Hualien", kind="profile", keywords=["home", "花蓮"])
    listed = http.get("/api/memories").json()
    assert listed["scope"] == SCOPE and listed["total"] == 1
    record = listed["memories"][0]
    assert set(record) == {
        "id", "content", "kind", "keywords", "author", "source",
        "created_at", "updated_at", "expires_at",
    }  # fmt: skip
    assert record["id"] == added["id"] and record["keywords"] == ["home", "花蓮"]
    assert record["author"] == "john"


def test_adding_a_duplicate_answers_200_with_the_existing_memory(http: httpx.Client) -> None:
    first = _add(http, "Alice drinks americano")
    again = http.post("/api/memories", json={"content": "Alice drinks americano"})
    assert again.status_code == 200
    assert again.json()["id"] == first["id"] and again.json()["created"] is False


def test_get_returns_one_memory_and_unknown_ids_are_404(http: httpx.Client) -> None:
    added = _add(http, "Алиса любит чай")
    assert http.get(f"/api/memories/{added['id']}").json()["content"] == "Алиса любит чай"
    missing = http.get("/api/memories/999")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "there is no memory #999 in this conversation"


def test_an_id_from_another_scope_is_not_found(http: httpx.Client) -> None:
    other = http.post("/api/memories", params={"scope": "api:bob"}, json={"content": "Bob"})
    memory_id = other.json()["id"]
    assert http.get(f"/api/memories/{memory_id}").status_code == 404
    assert http.delete(f"/api/memories/{memory_id}").status_code == 404


def test_update_supersedes_and_history_shows_both_versions(http: httpx.Client) -> None:
    old = _add(http, "Alice lives in Hualien")
    new = http.put(f"/api/memories/{old['id']}", json={"content": "Alice lives in Taipei"})
    assert new.status_code == 200
    assert new.json()["content"] == "Alice lives in Taipei" and new.json()["id"] != old["id"]
    history = http.get(f"/api/memories/{new.json()['id']}/history").json()["history"]
    assert [entry["action"] for entry in history] == ["add", "update"]
    assert all(entry["via"] == "api" for entry in history)
    listed = http.get("/api/memories").json()["memories"]
    assert [m["content"] for m in listed] == ["Alice lives in Taipei"]


def test_delete_erases_the_memory_and_its_versions(http: httpx.Client) -> None:
    old = _add(http, "Alice's locker code spot is the blue door")
    new = http.put(f"/api/memories/{old['id']}", json={"content": "Alice's locker is red"})
    deleted = http.delete(f"/api/memories/{new.json()['id']}")
    assert deleted.status_code == 200 and sorted(deleted.json()["erased"]) == sorted(
        [old["id"], new.json()["id"]]
    )
    assert http.get("/api/memories").json()["total"] == 0
    assert http.delete(f"/api/memories/{new.json()['id']}").status_code == 404


def test_search_finds_memories_in_any_language(http: httpx.Client) -> None:
    _add(http, "我每天早上喝美式咖啡")
    _add(http, "Alice plays the cello")
    found = http.post("/api/memories/search", json={"query": "咖啡"}).json()["results"]
    assert [m["content"] for m in found] == ["我每天早上喝美式咖啡"]


def test_the_block_is_what_the_model_sees(http: httpx.Client) -> None:
    added = _add(http, "Alice lives in Hualien", kind="profile")
    block = http.get("/api/memories/block").json()
    assert block["text"].startswith("<long_term_memory>")
    assert f"#{added['id']} [profile] Alice lives in Hualien" in block["text"]
    assert block["shown"] == [added["id"]] and block["hidden"] == 0


def test_export_then_import_into_another_scope(http: httpx.Client) -> None:
    _add(http, "Alice lives in Hualien")
    _add(http, "Alice likes 烏龍茶")
    exported = http.get("/api/memories/export")
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    lines = exported.text.splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["content"] == "Alice lives in Hualien"
    imported = http.post(
        "/api/memories/import", params={"scope": "api:copy"}, content=exported.text.encode()
    )
    assert imported.status_code == 200 and len(imported.json()["added"]) == 2
    again = http.post(
        "/api/memories/import", params={"scope": "api:copy"}, content=exported.text.encode()
    )
    assert len(again.json()["already_present"]) == 2


def test_a_bad_import_line_changes_nothing(http: httpx.Client) -> None:
    body = '{"content": "ok", "author": "a", "created_at": "2026-01-01T00:00:00+00:00"}\nnope\n'
    reply = http.post("/api/memories/import", content=body.encode())
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith("line 2 is not a memory")
    assert http.get("/api/memories").json()["total"] == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"content": ""}, "content: String should have at least 1 character"),
        ({"content": "x" * 501}, "at most 500"),
        ({"content": "my password is hunter2-Secret!"}, "password"),
        ({"content": "ok", "kind": "two words"}, "kind must be one of"),
        ({"content": "ok", "expires_at": "2020-01-01T00:00:00+00:00"}, "already past"),
        ({"content": "ok", "expires_at": "2030-01-01T00:00:00"}, "time zone"),
    ],
)
def test_bad_memories_are_refused_with_one_line(
    http: httpx.Client, body: dict[str, object], message: str
) -> None:
    reply = http.post("/api/memories", json=body)
    assert reply.status_code in (400, 422)
    error = reply.json()["error"]
    assert error["status"] == reply.status_code and message in error["message"]
    assert "\n" not in error["message"] and "Traceback" not in reply.text
    assert http.get("/api/memories").json()["total"] == 0


def test_a_client_is_confined_to_its_scope_on_every_memory_route(alice: httpx.Client) -> None:
    mine = alice.post("/api/memories", json={"content": "Alice is here"})
    assert mine.status_code == 201
    memory_id = mine.json()["id"]
    other = {"scope": "api:bob"}
    for method, path in [
        ("GET", "/api/memories"),
        ("POST", "/api/memories"),
        ("GET", f"/api/memories/{memory_id}"),
        ("PUT", f"/api/memories/{memory_id}"),
        ("DELETE", f"/api/memories/{memory_id}"),
        ("GET", f"/api/memories/{memory_id}/history"),
        ("POST", "/api/memories/search"),
        ("GET", "/api/memories/export"),
        ("POST", "/api/memories/import"),
        ("GET", "/api/memories/block"),
        ("GET", "/api/reminders"),
        ("POST", "/api/reminders"),
        ("DELETE", "/api/reminders/1"),
        ("GET", "/api/sessions"),
        ("GET", "/api/sessions/live"),
    ]:
        body = {"content": "x", "query": "x", "text": "x", "when": "tomorrow 9am"}
        reply = alice.request(method, path, params=other, json=body)
        assert reply.status_code == 403, (method, path, reply.text)
    assert alice.get("/api/memories").json()["memories"][0]["content"] == "Alice is here"


# -- reminders --------------------------------------------------------------------------


def test_reminders_add_with_a_time_phrase_list_and_cancel(http: httpx.Client) -> None:
    added = http.post("/api/reminders", json={"text": "call mum", "when": "in 20 minutes"})
    assert added.status_code == 201
    reminder = added.json()
    assert reminder["due_at"] == "2026-11-30T09:20:00+00:00"
    assert "call mum" in reminder["description"]
    listed = http.get("/api/reminders").json()["reminders"]
    assert [r["id"] for r in listed] == [reminder["id"]]
    cancelled = http.delete(f"/api/reminders/{reminder['id']}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert http.get("/api/reminders").json()["reminders"] == []
    done = http.get("/api/reminders", params={"include_done": "true"}).json()["reminders"]
    assert [r["status"] for r in done] == ["cancelled"]
    again = http.delete(f"/api/reminders/{reminder['id']}")
    assert again.status_code == 400 and "already cancelled" in again.json()["error"]["message"]


def test_a_chinese_time_phrase_sets_a_reminder(http: httpx.Client) -> None:
    added = http.post("/api/reminders", json={"text": "吃藥", "when": "明天早上8点"})
    assert added.status_code == 201
    assert added.json()["local_due"].startswith("2026-12-01T08:00")


@pytest.mark.parametrize(
    "body",
    [{"text": "x", "when": "whenever you like"}, {"text": "x"}, {"text": " ", "when": "in 1 hour"}],
)
def test_bad_reminders_are_refused(http: httpx.Client, body: dict[str, str]) -> None:
    reply = http.post("/api/reminders", json=body)
    assert reply.status_code == 400
    assert http.get("/api/reminders").json()["reminders"] == []


def test_cancelling_an_unknown_reminder_is_404(http: httpx.Client) -> None:
    assert http.delete("/api/reminders/4242").status_code == 404


# -- sessions ---------------------------------------------------------------------------


def _archive(lore: Runtime, scope: str, texts: list[str]) -> ArchivedSession:
    lore.session(scope).append([{"role": "user", "content": text} for text in texts])
    entry = close_session(lore, scope)
    assert entry is not None
    return entry


def test_sessions_list_the_live_and_closed_sessions(gateway: Gateway, http: httpx.Client) -> None:
    assert http.get("/api/sessions").json()["live"] is None  # reading creates nothing
    entry = _archive(gateway.lore, SCOPE, ["first", "second"])
    _archive(gateway.lore, "api:bob", ["not alice's"])
    listed = http.get("/api/sessions").json()
    assert [s["session_id"] for s in listed["archived"]] == [entry.session_id]
    assert listed["live"]["message_count"] == 0


def test_a_transcript_is_read_exactly_and_paged(gateway: Gateway, http: httpx.Client) -> None:
    entry = _archive(gateway.lore, SCOPE, ["один", "二", "three"])
    page = http.get(f"/api/sessions/{entry.session_id}", params={"offset": 1, "limit": 1}).json()
    assert page["total"] == 3 and [m["content"] for m in page["messages"]] == ["二"]
    gateway.lore.session(SCOPE).append([{"role": "user", "content": "live now"}])
    live = http.get("/api/sessions/live").json()
    assert live["session"]["live"] is True and live["messages"][0]["content"] == "live now"


def test_another_scopes_transcript_is_not_found(gateway: Gateway, http: httpx.Client) -> None:
    entry = _archive(gateway.lore, "api:bob", ["private"])
    reply = http.get(f"/api/sessions/{entry.session_id}")
    assert reply.status_code == 404 and "private" not in reply.text


def test_a_summary_links_back_to_its_transcript(gateway: Gateway, http: httpx.Client) -> None:
    entry = _archive(gateway.lore, SCOPE, ["we planned the trip", "to Hualien"])
    note = gateway.lore.config.workspace / "memory" / "2026-11-30-0900-trip.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Trip planning\nAlice plans a trip to Hualien.\n", encoding="utf-8")
    archive = gateway.lore.sessions.archive
    archive.link_summary(
        entry.session_id, note.relative_to(gateway.lore.config.home).as_posix(), "trip", "written"
    )
    summary = http.get(f"/api/sessions/{entry.session_id}/summary").json()
    assert summary["status"] == "written" and "trip to Hualien" in summary["text"]
    transcript = http.get(summary["transcript"]).json()
    assert [m["content"] for m in transcript["messages"]] == ["we planned the trip", "to Hualien"]


def test_bad_paging_is_a_422(gateway: Gateway, http: httpx.Client) -> None:
    reply = http.get("/api/sessions/live", params={"offset": -1})
    assert reply.status_code == 422 and reply.json()["error"]["message"].startswith("offset")


def test_a_memory_deleted_over_rest_is_not_restated_by_rest_search(
    http: httpx.Client, gateway: Gateway
) -> None:
    from lore.ports.memories import Source
    from lore.search import searcher

    lore = gateway.lore
    session = lore.session(SCOPE)
    session.append(
        [
            {"role": "user", "content": "remember that I love jazz", "author": "alice"},
            {"role": "assistant", "content": "Noted: User loves jazz music."},
            {"role": "user", "content": "I walk the dog every morning", "author": "alice"},
            {"role": "assistant", "content": "Nice."},
        ]
    )
    memory, _ = lore.memory.remember(
        SCOPE,
        "User loves jazz music",
        author="alice",
        via="tool",
        now=lore.clock.now(),
        source=Source(session.meta.session_id, 0),
    )
    searcher(lore).index_live(SCOPE)
    assert "jazz" in http.get("/api/search", params={"q": "what music do I like"}).text

    assert http.delete(f"/api/memories/{memory.id}").status_code == 200
    for query in ("what music do I like", "jazz"):
        assert "jazz" not in http.get("/api/search", params={"q": query}).text.lower()
        found = http.post("/api/memories/search", json={"query": query})
        assert found.status_code == 200 and "jazz" not in found.text.lower()
    assert "dog" in http.get("/api/search", params={"q": "dog"}).text
