"""The web page's search names where each hit came from in words a person reads ("memory
#3", "note memory/2026-11-29.md", "conversation 2026-11-30 (session …)"), each a link to
it, never the record the API returns."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lore.ports.memories import Source
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


@pytest.mark.parametrize(
    "said,old,new,word",
    [
        ("I live in Hualien", "User lives in Hualien", "User lives in Taipei", "Hualien"),
        ("我住在花莲", "用户住在花莲", "用户住在台北", "花莲"),
        (
            "я живу в Хуаляне",
            "Пользователь живёт в Хуаляне",
            "Пользователь живёт в Тайбэе",
            "Хуаляне",
        ),
    ],
    ids=["en", "zh", "ru"],
)
def test_a_message_stating_a_superseded_value_is_labelled_with_the_current_memory(
    lore: Runtime, said: str, old: str, new: str, word: str
) -> None:
    session = lore.session(HOME)
    session.append(
        [
            {"role": "user", "content": said, "timestamp": NOW.isoformat()},
            {"role": "assistant", "content": "OK.", "timestamp": NOW.isoformat()},
        ]
    )
    first, _ = lore.memory.remember(
        HOME, old, author="john", via="tool", now=NOW, source=Source(session.meta.session_id, 0)
    )
    current = lore.memory.supersede(HOME, first.id, new, author="john", via="tool", now=NOW)
    searcher(lore).index_live(HOME)

    html = _search_page(lore, word)

    label = (
        f'superseded by <a href="/ui/memories/{current.id}?scope=cli%3Adefault">#{current.id}</a>'
    )
    assert label in html
    assert "conversation 2026-11-30" in html  # the message keeps its date
