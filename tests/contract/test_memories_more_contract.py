"""The memories contract, on every backend: what a memory store must do, whatever it
stores in (superseding, forgetting that erases, scopes that never leak, duplicates,
import and export, search in Chinese, English and Russian)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lore.errors import InvalidInputError, NotFoundError
from lore.ports.memories import Source
from tests.contract.conftest import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
OTHER = "telegram:42"


@pytest.fixture
def store(backend: Backend) -> Any:
    return backend.memories


def note(store: Any, content: str, scope: str = HOME, **kw: Any) -> int:
    memory, _ = store.remember(scope, content, author="john", via="tool", now=NOW, **kw)
    return int(memory.id)


def found(store: Any, query: str, scope: str = HOME) -> list[str]:
    return [m.content for m in store.search(scope, query, now=NOW)]


# -- writing ------------------------------------------------------------------------------


def test_remember_stores_every_field_of_the_fact(store: Any) -> None:
    memory, created = store.remember(
        HOME,
        "John lives in Hualien",
        kind="profile",
        keywords=["home", "Taiwan"],
        author="John",
        via="tool",
        now=NOW,
        source=Source("s-1", 4),
        expires_at=NOW + timedelta(days=3),
    )
    assert created
    assert store.get(HOME, memory.id) == memory
    assert (memory.content, memory.kind, memory.keywords) == (
        "John lives in Hualien",
        "profile",
        ("home", "Taiwan"),
    )
    assert (memory.author, memory.source, memory.status) == ("John", Source("s-1", 4), "active")
    assert memory.created_at == memory.updated_at == NOW
    assert memory.expires_at == NOW + timedelta(days=3)


def test_an_exact_duplicate_in_the_scope_returns_the_existing_memory(store: Any) -> None:
    first = note(store, "I drink tea")
    again, created = store.remember(HOME, "  I drink   tea ", author="mary", via="cli", now=NOW)
    assert (again.id, created) == (first, False)
    assert [m.id for m in store.active(HOME, now=NOW)] == [first]


def test_the_same_text_in_another_scope_is_its_own_memory(store: Any) -> None:
    assert note(store, "I drink tea") != note(store, "I drink tea", scope=OTHER)


def test_refused_input_stores_nothing(store: Any) -> None:
    for content, reason in [
        ("x" * 501, "at most 500 characters"),
        (" \n ", "needs some text"),
        ("my password is hunter22", "password"),
        ("пароль: qwerty123", "password"),
    ]:
        with pytest.raises(InvalidInputError, match=reason):
            note(store, content)
    assert store.active(HOME, now=NOW) == []
    assert store.recent_changes(HOME) == []


def test_five_hundred_chinese_characters_fit(store: Any) -> None:
    assert len(store.get(HOME, note(store, "咖" * 500)).content) == 500


def test_supersede_keeps_the_old_version_in_the_history_linked_to_the_new(store: Any) -> None:
    old = note(store, "John lives in Taipei", kind="profile")
    later = NOW + timedelta(days=1)
    new = store.supersede(
        HOME, old, "John lives in Hualien", author="mary", via="extraction", now=later
    )
    previous = store.get(HOME, old)
    assert (previous.status, previous.superseded_by) == ("superseded", new.id)
    assert previous.content == "John lives in Taipei"
    assert (new.kind, new.created_at, new.updated_at) == ("profile", NOW, later)
    actions = [(e.action, e.memory_id, e.actor, e.via) for e in store.history(HOME, old)]
    assert actions == [("add", old, "john", "tool"), ("update", new.id, "mary", "extraction")]
    assert store.history(HOME, new.id)[1].detail == {
        "content": "John lives in Hualien",
        "kind": "profile",
        "keywords": [],
        "replaces": old,
    }


def test_a_superseded_version_never_reaches_the_active_list_or_search(store: Any) -> None:
    old = note(store, "John lives in Taipei")
    new = store.supersede(HOME, old, "John lives in Hualien", author="john", via="tool", now=NOW)
    assert [m.id for m in store.active(HOME, now=NOW)] == [new.id]
    assert store.search(HOME, "Taipei", now=NOW) == []
    with pytest.raises(InvalidInputError, match="old version, replaced by"):
        store.supersede(HOME, old, "again", author="john", via="tool", now=NOW)


def test_superseding_with_the_text_of_another_memory_is_refused(store: Any) -> None:
    tea = note(store, "I drink tea")
    coffee = note(store, "I drink coffee")
    with pytest.raises(InvalidInputError, match=f"#{tea} already says exactly that"):
        store.supersede(HOME, coffee, "I drink tea", author="john", via="tool", now=NOW)
    assert store.get(HOME, coffee).status == "active"


def test_expired_memories_are_left_out_of_the_list_and_search(store: Any) -> None:
    note(store, "Mom's flight lands Thursday", expires_at=NOW + timedelta(days=2))
    assert len(store.active(HOME, now=NOW + timedelta(days=1))) == 1
    assert store.active(HOME, now=NOW + timedelta(days=2)) == []
    assert store.search(HOME, "flight", now=NOW + timedelta(days=3)) == []


def test_noting_an_expired_fact_again_renews_it(store: Any) -> None:
    old = note(store, "Office is closed", expires_at=NOW + timedelta(hours=1))
    later = NOW + timedelta(days=1)
    renewed, created = store.remember(
        HOME, "Office is closed", author="john", via="tool", now=later
    )
    assert created and renewed.id != old
    assert [m.id for m in store.active(HOME, now=later)] == [renewed.id]


# -- forgetting ---------------------------------------------------------------------------


def test_forget_erases_the_text_but_keeps_the_id_taken(store: Any) -> None:
    memory_id = note(store, "I drink tea", keywords=["drinks"])
    assert store.forget(HOME, memory_id, by="mary", via="cli", now=NOW) == [memory_id]
    with pytest.raises(NotFoundError):
        store.get(HOME, memory_id)
    assert note(store, "something new") > memory_id


def test_forget_erases_every_version_from_the_history_and_the_index(store: Any) -> None:
    first = note(store, "John lives in Taipei")
    second = store.supersede(HOME, first, "John lives in Tainan", author="j", via="tool", now=NOW)
    third = store.supersede(HOME, second.id, "John lives in 花莲", author="j", via="tool", now=NOW)
    assert sorted(store.forget(HOME, third.id, by="j", via="tool", now=NOW)) == [
        first,
        second.id,
        third.id,
    ]
    trail = store.history(HOME, first)
    assert all(entry.detail is None for entry in trail[:-1])
    assert trail[-1].detail == {"erased": [third.id, second.id, first]}
    for query in ("Taipei", "Tainan", "花莲", "John"):
        assert found(store, query) == []
    assert store.export(HOME) == []


def test_forget_from_another_scope_is_not_found_and_changes_nothing(store: Any) -> None:
    memory_id = note(store, "I drink tea")
    with pytest.raises(NotFoundError, match=f"no memory #{memory_id} in this conversation"):
        store.forget(OTHER, memory_id, by="eve", via="tool", now=NOW)
    assert store.get(HOME, memory_id).content == "I drink tea"


def test_unknown_forgotten_and_huge_ids_are_not_found(store: Any) -> None:
    memory_id = note(store, "I drink tea")
    store.forget(HOME, memory_id, by="john", via="tool", now=NOW)
    for unknown in (memory_id, 999, 10**30, -(10**30), 0):
        with pytest.raises(NotFoundError):
            store.forget(HOME, unknown, by="john", via="tool", now=NOW)
        with pytest.raises(NotFoundError):
            store.get(HOME, unknown)
    with pytest.raises(NotFoundError):
        store.history(HOME, 10**30)


def test_get_and_history_of_another_scope_are_not_found(store: Any) -> None:
    memory_id = note(store, "I drink tea")
    with pytest.raises(NotFoundError):
        store.get(OTHER, memory_id)
    with pytest.raises(NotFoundError):
        store.history(OTHER, memory_id)


# -- reading ------------------------------------------------------------------------------


def test_the_block_order_is_profile_first_then_most_recently_updated(store: Any) -> None:
    old = note(store, "likes tea")
    store.remember(HOME, "John, 40", kind="profile", author="j", via="tool", now=NOW)
    store.remember(HOME, "likes hiking", author="j", via="tool", now=NOW + timedelta(hours=1))
    note(store, "a fact of another scope", scope=OTHER)
    contents = [m.content for m in store.active(HOME, now=NOW + timedelta(hours=2))]
    assert contents == ["John, 40", "likes hiking", "likes tea"]
    page = store.active_page(HOME, now=NOW + timedelta(hours=2), limit=1)
    assert ([m.content for m in page.memories], page.total) == (["John, 40"], 3)
    assert store.get(HOME, old).content == "likes tea"


def test_recent_changes_are_the_scopes_latest_newest_first(store: Any) -> None:
    tea = note(store, "I drink tea")
    note(store, "noise", scope=OTHER)
    store.forget(HOME, tea, by="mary", via="command", now=NOW)
    assert [(e.action, e.actor) for e in store.recent_changes(HOME)] == [
        ("forget", "mary"),
        ("add", "john"),
    ]


def test_export_then_import_into_an_empty_scope_round_trips_exactly(store: Any) -> None:
    note(store, "John lives in Hualien", kind="profile", source=Source("s-1", 2))
    note(store, "我每天早上喝美式咖啡", keywords=["提神", "coffee"], expires_at=NOW + timedelta(30))
    store.forget(HOME, note(store, "temporary"), by="john", via="cli", now=NOW)
    lines = store.export(HOME)
    assert len(lines) == 2 and all(json.loads(line)["author"] == "john" for line in lines)

    result = store.import_("line:group:7", lines, by="mary", via="cli", now=NOW)
    assert len(result.added) == 2
    exported = [json.loads(line) for line in store.export("line:group:7")]
    assert [{**r, "id": 0} for r in exported] == [{**json.loads(x), "id": 0} for x in lines]
    assert [e.action for e in store.history("line:group:7", result.added[0])] == ["import"]
    assert found(store, "提神", scope="line:group:7") == ["我每天早上喝美式咖啡"]


def test_import_keeps_free_ids_and_later_memories_never_collide(store: Any) -> None:
    line = json.dumps(
        {"id": 500, "content": "kept id", "author": "a", "created_at": "2026-01-01T00:00:00Z"}
    )
    assert store.import_(HOME, [line], by="john", via="cli", now=NOW).added == [500]
    assert note(store, "written after the import") > 500


def test_importing_what_is_already_there_changes_nothing(store: Any) -> None:
    note(store, "I drink tea")
    lines = store.export(HOME)
    result = store.import_(HOME, lines, by="john", via="cli", now=NOW)
    assert (result.added, len(result.already_present)) == ([], 1)
    assert store.export(HOME) == lines


def test_a_malformed_import_line_is_named_and_nothing_is_imported(store: Any) -> None:
    good = '{"content": "fine", "author": "a", "created_at": "2026-01-01T00:00:00+00:00"}'
    with pytest.raises(InvalidInputError, match="line 2 is not a memory"):
        store.import_(HOME, [good, "not json"], by="john", via="cli", now=NOW)
    assert store.active(HOME, now=NOW) == []


# -- search -------------------------------------------------------------------------------

COFFEE = "我每天早上喝美式咖啡"
MEETING = "我明天下午三点开会"
SHANGHAI = "我老家在上海"
SEASIDE = "周末早上海边跑步"
HUALIEN = "John lives in Hualien and drinks two coffees a day"
RUSSIAN = "Я люблю кофе по утрам"
MOSCOW = "Мама живёт в Москве"
JAPANESE = "私は毎朝コーヒーを飲みます"


def needs_real_search(backend_name: str) -> None:
    if backend_name == "fake":
        pytest.skip("the in-memory backend has no word segmentation, stemming or ranking")


@pytest.fixture
def searchable(store: Any) -> Any:
    for text in (MEETING, SHANGHAI, SEASIDE, HUALIEN, RUSSIAN, MOSCOW, JAPANESE):
        note(store, text)
    note(store, COFFEE, keywords=["提神", "caffeine"])
    note(store, "我也喝美式咖啡", scope=OTHER)
    return store


@pytest.mark.parametrize("query", ["咖啡", "美式咖啡", "美式", "早上喝", "咖", "我每天喝什么咖啡"])
def test_chinese_words_of_any_length_find_the_memory(
    searchable: Any, query: str, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, query)[0] == COFFEE


def test_a_whole_chinese_word_ranks_above_characters_straddling_two(
    searchable: Any, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, "上海")[0] == SHANGHAI


def test_keywords_find_a_memory_by_words_it_does_not_contain(searchable: Any) -> None:
    assert found(searchable, "提神") == [COFFEE]
    assert found(searchable, "caffeine") == [COFFEE]


@pytest.mark.parametrize("query", ["coffee", "Coffees", "HUALIEN", "drinking", "ｃｏｆｆｅｅ"])
def test_english_is_case_insensitive_and_stemmed(
    searchable: Any, query: str, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, query) == [HUALIEN]


def test_english_stopwords_do_not_match_everything(searchable: Any) -> None:
    assert found(searchable, "where does the John live") == [HUALIEN]


@pytest.mark.parametrize(
    ("query", "text"),
    [("кофе", RUSSIAN), ("Москва", MOSCOW), ("мама живет", MOSCOW), ("КОФЕ", RUSSIAN)],
)
def test_russian_words_find_their_inflected_forms(
    searchable: Any, query: str, text: str, backend_name: str
) -> None:
    needs_real_search(backend_name)
    assert found(searchable, query)[0] == text


def test_japanese_is_found(searchable: Any) -> None:
    assert found(searchable, "コーヒー") == [JAPANESE]


def test_search_never_returns_another_scopes_memory(searchable: Any) -> None:
    assert [m.scope for m in searchable.search(OTHER, "咖啡", now=NOW)] == [OTHER]
    assert "我也喝美式咖啡" not in found(searchable, "美式咖啡")


@pytest.mark.parametrize(
    "query",
    ['coffee" OR NOT (', "*", "NEAR(a b)", "AND", "-", "。！", "", "a\u19b1b", "it's", "\\"],
)
def test_queries_with_search_syntax_or_no_words_are_safe(searchable: Any, query: str) -> None:
    searchable.search(HOME, query, now=NOW)
