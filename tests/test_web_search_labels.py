"""The web page's search names where each hit came from in words a person reads ("memory
#3", "note memory/2026-11-29.md", "conversation 2026-11-30 (session …)"), each a link to
it, never the record the API returns."""

from __future__ import annotations

from datetime import UTC, datetime

from lore.runtime import Runtime
from lore.search import searcher
from tests.gateway_server import running_gateway

HOME = "cli:default"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _search_page(lore: Runtime, query: str) -> str:
    with running_gateway(lore) as gateway, gateway.client() as http:
        page = http.get("/ui/search", params={"scope": HOME, "q": query})
    assert page.status_code == 200
    return page.text


def test_a_memory_hit_is_labelled_with_its_id_and_links_to_it(lore: Runtime) -> None:
    memory, _ = lore.memory.remember(HOME, "John's kayak is red", author="john", via="cli", now=NOW)

    html = _search_page(lore, "kayak")

    assert f"memory #{memory.id}" in html
    assert f'href="/ui/memories/{memory.id}?scope=cli%3Adefault"' in html
    assert "{&#39;kind&#39;" not in html and "{'kind'" not in html


def test_a_note_hit_is_labelled_with_its_file(lore: Runtime) -> None:
    lore.workspace.memory_dir.mkdir(parents=True, exist_ok=True)
    (lore.workspace.memory_dir / "2026-11-29.md").write_text(
        "- 约翰周六去划皮划艇\n", encoding="utf-8"
    )

    html = _search_page(lore, "皮划艇")

    assert "note memory/2026-11-29.md" in html
    assert "&#39;path&#39;" not in html


def test_a_message_hit_is_labelled_with_its_conversation_and_links_to_it(
    lore: Runtime,
) -> None:
    session = lore.session(HOME)
    session.append(
        [{"role": "user", "content": "Мы купили байдарку", "timestamp": NOW.isoformat()}]
    )
    searcher(lore).index_live(HOME)
    session_id = session.meta.session_id

    html = _search_page(lore, "байдарку")

    assert f"conversation 2026-11-30 (session {session_id[:8]})" in html
    assert f'href="/ui/sessions/{session_id}?scope=cli%3Adefault"' in html
    assert "message_index" not in html
