"""MemoryStore: remembering, duplicates, refusals, superseding, expiry, forgetting, audit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.errors import InvalidInputError, NotFoundError
from lore.ports.memories import MemoryStore, Source
from tests.memory_notes import note

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "lore.db")
    yield database
    database.close()


@pytest.fixture
def store(db: Database) -> MemoryStore:
    return SQLiteMemoryStore(db)


def test_remember_stores_every_field_of_the_fact(store: MemoryStore) -> None:
    memory, created = store.remember(
        HOME,
        "John lives in Hualien",
        kind="profile",
        keywords=["home", "Taiwan"],
        author="John",
        via="tool",
        now=NOW,
        source=Source("s-1", 4),
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
    assert memory.expires_at is None


def test_exact_duplicate_in_the_scope_returns_the_existing_id(store: MemoryStore) -> None:
    first = note(store, "I drink tea")
    again, created = store.remember(HOME, "  I drink   tea ", author="mary", via="cli", now=NOW)
    assert (again.id, created) == (first, False)
    assert [m.id for m in store.active(HOME, now=NOW)] == [first]


def test_the_same_text_in_another_scope_is_its_own_memory(store: MemoryStore) -> None:
    assert note(store, "I drink tea") != note(store, "I drink tea", scope="telegram:42")


def test_text_is_kept_on_one_line(store: MemoryStore) -> None:
    memory = store.get(HOME, note(store, "line one\nline two\r\n\tthree\u2028four"))
    assert memory.content == "line one line two three four"


def test_content_over_500_characters_is_refused_with_the_reason(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="at most 500 characters and this one has 501"):
        note(store, "x" * 501)
    assert store.active(HOME, now=NOW) == []


def test_content_of_exactly_500_characters_is_accepted(store: MemoryStore) -> None:
    assert len(store.get(HOME, note(store, "咖" * 500)).content) == 500


def test_empty_content_is_refused(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="needs some text"):
        note(store, " \n ")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("my openai key is sk-proj-abcdefghijklmnopqrstuvwx12", "API key"),
        ("aws AKIAIOSFODNN7EXAMPLE", "AWS access key"),
        ("github ghp_" + "aB3d" * 9, "GitHub token"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "JWT"),
        ("my password is hunter22", "password"),
        ("我的密码是abc12345", "password"),
        ("пароль: qwerty123", "password"),
        ("visa 4111 1111 1111 1111 exp 12/29", "card number"),
        ("token Xk9fP2mQ7vL3nR8sT1wY6zB4cD0eF5gH", "token"),
        ("the wifi password for the guest network is Zk84mq", "password"),
        ("家里wifi密码 83920174", "password"),
        ("пароль от wifi — qwerty123", "password"),
        ("пароль для входа в банк — Zx81", "password"),
        ("PIN is 4821", "PIN"),
        ("my locker pass: 3141", "PIN"),
    ],
)
def test_what_looks_like_a_secret_is_refused_with_an_explanation(
    store: MemoryStore, text: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        note(store, text)
    message = str(refused.value)
    assert reason in message and "password manager" in message
    assert "hunter22" not in message and "4111" not in message  # never echoes the secret
    assert store.active(HOME, now=NOW) == []


@pytest.mark.parametrize(
    "text",
    [
        "I changed my password yesterday",
        "密码忘了怎么办",
        "call me at 0912-345-678",
        "order 4111 1111 1111 1112 shipped",  # fails Luhn
        "commit 3f2a9c0d1e4b5a6978877665544332211ffeeddcc",
        "John lives in Hualien",
        # Phone numbers pass Luhn one time in ten; no card number starts with 0, 1, 7-9.
        "Mom's phone is +86 138 1234 5678",
        "妈妈的手机 0086 138 1234 5678",
        "Office line 8 800 555 35 35 ext 4",
        "Our ski pass was expensive this year",
        "The pin is under the doormat",
        "密码学是他的专业",
        "密码错误3次就会锁定",
    ],
)
def test_ordinary_text_is_not_mistaken_for_a_secret(store: MemoryStore, text: str) -> None:
    note(store, text)


def test_a_secret_in_the_keywords_is_refused_too(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="API key"):
        note(store, "work laptop", keywords=["sk-abcdefghijklmnopqrstuvwxyz"])


def test_kind_must_be_one_of_the_kinds(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="kind must be one of"):
        note(store, "x", kind="not a kind!")


def test_timestamps_must_be_aware(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="aware"):
        store.remember(HOME, "x", author="a", via="tool", now=datetime(2026, 1, 1))


def test_supersede_keeps_the_old_version_in_the_history_linked_to_the_new(
    store: MemoryStore,
) -> None:
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


def test_a_superseded_version_never_reaches_the_active_list_or_search(store: MemoryStore) -> None:
    old = note(store, "John lives in Taipei")
    new = store.supersede(HOME, old, "John lives in Hualien", author="john", via="tool", now=NOW)
    assert [m.id for m in store.active(HOME, now=NOW)] == [new.id]
    assert store.search(HOME, "Taipei", now=NOW) == []
    with pytest.raises(InvalidInputError, match="old version, replaced by"):
        store.supersede(HOME, old, "again", author="john", via="tool", now=NOW)


def test_expired_memories_are_left_out_of_the_list_and_search(store: MemoryStore) -> None:
    note(store, "Mom's flight lands Thursday", expires_at=NOW + timedelta(days=2))
    assert len(store.active(HOME, now=NOW + timedelta(days=1))) == 1
    assert store.active(HOME, now=NOW + timedelta(days=2)) == []
    assert store.search(HOME, "flight", now=NOW + timedelta(days=3)) == []


def test_noting_an_expired_fact_again_renews_it(store: MemoryStore) -> None:
    old = note(store, "Office is closed", expires_at=NOW + timedelta(hours=1))
    later = NOW + timedelta(days=1)
    renewed, created = store.remember(
        HOME, "Office is closed", author="john", via="tool", now=later
    )
    assert created and renewed.id != old
    assert [m.id for m in store.active(HOME, now=later)] == [renewed.id]


def test_forget_erases_the_text_but_keeps_the_id_taken(store: MemoryStore) -> None:
    memory_id = note(store, "I drink tea", keywords=["drinks"])
    assert store.forget(HOME, memory_id, by="mary", via="cli", now=NOW) == [memory_id]
    with pytest.raises(NotFoundError):
        store.get(HOME, memory_id)
    assert note(store, "something new") > memory_id


def test_forget_erases_every_earlier_version_of_the_chain(store: MemoryStore) -> None:
    first = note(store, "John lives in Taipei")
    second = store.supersede(HOME, first, "John lives in Tainan", author="j", via="tool", now=NOW)
    third = store.supersede(
        HOME, second.id, "John lives in Hualien", author="j", via="tool", now=NOW
    )
    assert sorted(store.forget(HOME, third.id, by="j", via="tool", now=NOW)) == [
        first,
        second.id,
        third.id,
    ]
    for entry in store.history(HOME, first)[:-1]:
        assert entry.detail is None


def test_forget_records_who_when_and_how_but_not_the_text(store: MemoryStore) -> None:
    memory_id = note(store, "I drink tea")
    later = NOW + timedelta(minutes=5)
    store.forget(HOME, memory_id, by="mary", via="command", now=later)
    trail = store.history(HOME, memory_id)
    assert [(e.action, e.actor, e.via, e.at, e.detail) for e in trail] == [
        ("add", "john", "tool", NOW, None),
        ("forget", "mary", "command", later, {"erased": [memory_id]}),
    ]


def test_forget_in_another_scope_changes_nothing(store: MemoryStore) -> None:
    memory_id = note(store, "I drink tea")
    with pytest.raises(NotFoundError, match=f"no memory #{memory_id} in this conversation"):
        store.forget("telegram:42", memory_id, by="eve", via="tool", now=NOW)
    assert store.get(HOME, memory_id).content == "I drink tea"


def test_forget_of_an_unknown_or_already_forgotten_id_is_not_found(store: MemoryStore) -> None:
    memory_id = note(store, "I drink tea")
    store.forget(HOME, memory_id, by="john", via="tool", now=NOW)
    for unknown in (memory_id, 999):
        with pytest.raises(NotFoundError):
            store.forget(HOME, unknown, by="john", via="tool", now=NOW)


def test_an_id_beyond_what_sqlite_can_hold_is_simply_not_found(store: MemoryStore) -> None:
    huge = 10**30
    with pytest.raises(NotFoundError, match=f"no memory #{huge}"):
        store.forget(HOME, huge, by="john", via="tool", now=NOW)
    with pytest.raises(NotFoundError):
        store.supersede(HOME, huge, "x", author="john", via="tool", now=NOW)
    with pytest.raises(NotFoundError):
        store.history(HOME, -(10**30))


def test_get_and_history_of_another_scope_are_not_found(store: MemoryStore) -> None:
    memory_id = note(store, "I drink tea")
    with pytest.raises(NotFoundError):
        store.get("telegram:42", memory_id)
    with pytest.raises(NotFoundError):
        store.history("telegram:42", memory_id)


def test_export_then_import_into_a_new_database_round_trips_exactly(
    store: MemoryStore, tmp_path: Path
) -> None:
    note(store, "John lives in Hualien", kind="profile", source=Source("s-1", 2))
    note(
        store,
        "我每天早上喝美式咖啡",
        keywords=["提神", "coffee"],
        expires_at=NOW + timedelta(days=30),
    )
    gone = note(store, "temporary")
    store.forget(HOME, gone, by="john", via="cli", now=NOW)
    lines = store.export(HOME)
    assert len(lines) == 2 and all(json.loads(line)["author"] == "john" for line in lines)

    other = SQLiteMemoryStore(Database(tmp_path / "other.db"))
    result = other.import_(HOME, lines, by="mary", via="cli", now=NOW)
    assert len(result.added) == 2
    assert other.export(HOME) == lines
    assert [e.action for e in other.history(HOME, result.added[0])] == ["import"]


def test_importing_what_is_already_there_changes_nothing(store: MemoryStore) -> None:
    note(store, "I drink tea")
    lines = store.export(HOME)
    result = store.import_(HOME, lines, by="john", via="cli", now=NOW)
    assert (result.added, len(result.already_present)) == ([], 1)
    assert store.export(HOME) == lines


def test_import_into_another_scope_takes_new_ids(store: MemoryStore) -> None:
    original = note(store, "I drink tea")
    result = store.import_("telegram:42", store.export(HOME), by="john", via="cli", now=NOW)
    assert result.added != [original]
    assert store.get("telegram:42", result.added[0]).content == "I drink tea"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "line 2 is not a memory"),
        ('["a list"]', "expected a JSON object"),
        ('{"kind": "fact", "author": "a", "created_at": "2026-01-01T00:00:00+00:00"}', "content"),
        ('{"content": "x", "author": "a", "created_at": "yesterday"}', "line 2"),
        ('{"content": "x", "author": "a", "created_at": "2026-01-01T00:00:00"}', "time zone"),
        (
            '{"content": "' + "x" * 501 + '", "author": "a", "created_at": "2026-01-01T00:00:00Z"}',
            "line 2: a memory is at most 500",
        ),
        (
            '{"content": "pin: 9911", "author": "a", "created_at": "2026-01-01T00:00:00Z"}',
            "line 2: refused",
        ),
        (
            '{"id": 99999999999999999999, "content": "x", "author": "a",'
            ' "created_at": "2026-01-01T00:00:00Z"}',
            "line 2 is not a memory: id must be a positive integer",
        ),
    ],
)
def test_a_malformed_import_line_is_named_and_nothing_is_imported(
    store: MemoryStore, line: str, problem: str
) -> None:
    good = '{"content": "fine", "author": "a", "created_at": "2026-01-01T00:00:00+00:00"}'
    with pytest.raises(InvalidInputError, match=problem):
        store.import_(HOME, [good, line], by="john", via="cli", now=NOW)
    assert store.active(HOME, now=NOW) == []
