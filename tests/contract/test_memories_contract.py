"""What every MemoryStore does: scopes, duplicates, versions, expiry, forgetting, audit,
search, export and import. Written against the port only."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from lore.errors import InvalidInputError, NotFoundError
from lore.ports.memories import MemoryStore, Source
from tests.contract.conftest import Backend
from tests.memory_notes import note

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "line:group:family"


@pytest.fixture
def store(backend: Backend) -> MemoryStore:
    return backend.memories


def test_remember_keeps_every_field_and_get_returns_it(store: MemoryStore) -> None:
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
    assert (memory.scope, memory.content, memory.kind) == (HOME, "John lives in Hualien", "profile")
    assert (memory.keywords, memory.author, memory.source) == (
        ("home", "Taiwan"),
        "John",
        Source("s-1", 4),
    )
    assert (memory.status, memory.superseded_by, memory.expires_at) == ("active", None, None)
    assert memory.created_at == memory.updated_at == NOW
    lapsing, _ = store.remember(
        HOME, "Mom visits", author="John", via="tool", now=NOW, expires_at=NOW + timedelta(days=3)
    )
    assert store.get(HOME, lapsing.id).expires_at == NOW + timedelta(days=3)


def test_an_exact_duplicate_in_the_scope_returns_the_existing_memory(store: MemoryStore) -> None:
    first = note(store, "我每天早上喝美式咖啡")
    again, created = store.remember(
        HOME, "  我每天早上喝美式咖啡 ", author="mary", via="cli", now=NOW
    )
    assert (again.id, created) == (first, False)
    tea = note(store, "I drink tea")
    again, created = store.remember(HOME, "  I drink   tea ", author="mary", via="cli", now=NOW)
    assert (again.id, created) == (tea, False)
    assert [m.id for m in store.active(HOME, now=NOW)] == [tea, first]


def test_the_same_text_in_another_scope_is_its_own_memory(store: MemoryStore) -> None:
    mine, theirs = note(store, "Я люблю кофе"), note(store, "Я люблю кофе", scope=GROUP)
    assert mine != theirs
    assert [m.id for m in store.active(HOME, now=NOW)] == [mine]
    assert [m.id for m in store.active(GROUP, now=NOW)] == [theirs]


def test_a_scope_never_reads_or_changes_another_scopes_memories(store: MemoryStore) -> None:
    memory_id = note(store, "咖啡 at 9, кофе потом", scope=GROUP)
    for attempt in (
        lambda: store.get(HOME, memory_id),
        lambda: store.history(HOME, memory_id),
        lambda: store.forget(HOME, memory_id, by="eve", via="tool", now=NOW),
        lambda: store.supersede(HOME, memory_id, "mine now", author="eve", via="tool", now=NOW),
    ):
        with pytest.raises(NotFoundError, match=f"#{memory_id} in this conversation"):
            attempt()
    assert store.search(HOME, "咖啡", now=NOW) == store.search(HOME, "кофе", now=NOW) == []
    assert store.export(HOME) == [] and store.recent_changes(HOME) == []
    assert store.get(GROUP, memory_id).content == "咖啡 at 9, кофе потом"


def test_scopes_lists_each_conversation_holding_an_active_memory_once(
    store: MemoryStore,
) -> None:
    assert store.scopes() == []
    note(store, "Анна любит джаз", scope=GROUP)
    note(store, "安娜喝绿茶", scope=GROUP)
    gone = note(store, "John lives in Hualien")
    note(store, "John climbs", scope="telegram:42", expires_at=NOW - timedelta(days=1))
    assert store.scopes() == [HOME, GROUP, "telegram:42"]
    store.forget(HOME, gone, by="John", via="cli", now=NOW)
    assert store.scopes() == [GROUP, "telegram:42"]


def test_what_the_checks_refuse_is_never_stored(store: MemoryStore) -> None:
    for bad, reason in [
        ("x" * 501, "at most 500 characters and this one has 501"),
        ("  ", "needs some text"),
        (" \n ", "needs some text"),
        ("my password is hunter22", "password"),
    ]:
        with pytest.raises(InvalidInputError, match=reason):
            note(store, bad)
    with pytest.raises(InvalidInputError, match="kind must be one of"):
        note(store, "fine", kind="not a kind!")
    with pytest.raises(InvalidInputError, match="API key"):
        note(store, "work laptop", keywords=["sk-abcdefghijklmnopqrstuvwxyz"])
    assert store.active(HOME, now=NOW) == [] and store.recent_changes(HOME) == []


def test_five_hundred_chinese_characters_fit(store: MemoryStore) -> None:
    assert len(store.get(HOME, note(store, "咖" * 500)).content) == 500


def test_text_is_kept_on_one_line(store: MemoryStore) -> None:
    memory = store.get(HOME, note(store, "line one\nline two\r\n\tthree\u2028four"))
    assert memory.content == "line one line two three four"


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


def test_naive_timestamps_are_a_programming_error(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="aware"):
        store.remember(HOME, "x", author="a", via="tool", now=datetime(2026, 1, 1))


def test_a_naive_now_is_refused_even_where_nothing_would_be_written(store: MemoryStore) -> None:
    naive = datetime(2026, 11, 30, 9, 0)
    memory_id = note(store, "I drink tea")
    lines = store.export(HOME)
    refused: list[Callable[[], object]] = [
        lambda: store.remember(HOME, "I drink tea", author="a", via="tool", now=naive),
        lambda: store.import_(HOME, lines, by="a", via="cli", now=naive),
        lambda: store.erase([memory_id], [], by="a", via="cli", now=naive),
        lambda: store.active(HOME, now=naive),
        lambda: store.active_page(HOME, now=naive, limit=5),
        lambda: store.search(HOME, "tea", now=naive),
    ]
    for call in refused:
        with pytest.raises(ValueError, match="aware"):
            call()
    assert store.get(HOME, memory_id).content == "I drink tea"
    assert [e.action for e in store.history(HOME, memory_id)] == ["add"]


def test_a_kind_from_before_kinds_were_fixed_becomes_fact_when_the_memory_changes(
    backend: Backend,
) -> None:
    store = backend.memories
    memory_id = note(store, "John likes hiking", kind="preference")
    backend.write_old_kind(memory_id, "hobby")
    assert store.get(HOME, memory_id).kind == "hobby"
    new = store.supersede(HOME, memory_id, "John likes climbing", author="a", via="tool", now=NOW)
    assert new.kind == "fact"
    kept = store.supersede(HOME, new.id, "John likes both", author="a", via="tool", now=NOW)
    assert kept.kind == "fact"


def test_an_unknown_via_or_an_empty_scope_is_a_programming_error(store: MemoryStore) -> None:
    with pytest.raises(ValueError):
        store.remember(HOME, "x", author="a", via="telepathy", now=NOW)
    with pytest.raises(ValueError):
        store.remember("", "x", author="a", via="tool", now=NOW)


def test_supersede_keeps_the_old_version_linked_to_the_new(store: MemoryStore) -> None:
    old = note(store, "John lives in Taipei", kind="profile", keywords=["home"])
    later = NOW + timedelta(days=1)
    new = store.supersede(
        HOME, old, "John lives in Hualien", author="mary", via="extraction", now=later
    )
    previous = store.get(HOME, old)
    assert (previous.status, previous.superseded_by, previous.content) == (
        "superseded",
        new.id,
        "John lives in Taipei",
    )
    # Kind and keywords carry over unless given; the chain keeps its first creation time.
    assert (new.kind, new.keywords, new.created_at, new.updated_at) == (
        "profile",
        ("home",),
        NOW,
        later,
    )
    trail = [(e.action, e.memory_id, e.actor, e.via) for e in store.history(HOME, old)]
    assert trail == [("add", old, "john", "tool"), ("update", new.id, "mary", "extraction")]
    assert store.history(HOME, new.id) == store.history(HOME, old)
    assert store.history(HOME, new.id)[1].detail == {
        "content": "John lives in Hualien",
        "kind": "profile",
        "keywords": ["home"],
        "replaces": old,
    }


def test_an_old_version_is_out_of_the_active_list_and_search_and_cannot_be_superseded(
    store: MemoryStore,
) -> None:
    old = note(store, "John lives in Taipei")
    new = store.supersede(HOME, old, "John lives in Hualien", author="john", via="tool", now=NOW)
    assert [m.id for m in store.active(HOME, now=NOW)] == [new.id]
    assert store.search(HOME, "Taipei", now=NOW) == []
    with pytest.raises(InvalidInputError, match=f"replaced by #{new.id}"):
        store.supersede(HOME, old, "again", author="john", via="tool", now=NOW)


def test_supersede_into_the_text_of_another_memory_is_refused(store: MemoryStore) -> None:
    tea = note(store, "I drink tea")
    coffee = note(store, "I drink coffee")
    with pytest.raises(InvalidInputError, match=f"#{tea} already says exactly that"):
        store.supersede(HOME, coffee, "I drink tea", author="john", via="tool", now=NOW)
    assert store.get(HOME, coffee).status == "active"


def test_expired_memories_leave_the_list_and_search_but_stay_in_the_export(
    store: MemoryStore,
) -> None:
    note(store, "Mom's flight lands Thursday", expires_at=NOW + timedelta(days=2))
    assert len(store.active(HOME, now=NOW + timedelta(days=1))) == 1
    assert store.active(HOME, now=NOW + timedelta(days=2)) == []
    assert store.search(HOME, "flight", now=NOW + timedelta(days=3)) == []
    assert len(store.export(HOME)) == 1


def test_noting_an_expired_fact_again_renews_it_as_a_new_version(store: MemoryStore) -> None:
    old = note(store, "Office is closed", expires_at=NOW + timedelta(hours=1))
    later = NOW + timedelta(days=1)
    renewed, created = store.remember(
        HOME, "Office is closed", author="john", via="tool", now=later
    )
    assert created and renewed.id != old and renewed.expires_at is None
    assert [m.id for m in store.active(HOME, now=later)] == [renewed.id]
    assert store.get(HOME, old).superseded_by == renewed.id


def test_the_block_order_is_profile_first_then_most_recently_updated(store: MemoryStore) -> None:
    ids = []
    for minutes, (text, kind) in enumerate(
        [
            ("likes tea", "preference"),
            ("is John", "profile"),
            ("has a cat", "fact"),
            ("lives in Hualien", "profile"),
        ]
    ):
        memory, _ = store.remember(
            HOME, text, kind=kind, author="j", via="tool", now=NOW + timedelta(minutes=minutes)
        )
        ids.append(memory.id)
    tea, john, cat, hualien = ids
    order = [hualien, john, cat, tea]
    assert [m.id for m in store.active(HOME, now=NOW + timedelta(hours=1))] == order
    assert [m.id for m in store.active(HOME, now=NOW + timedelta(hours=1), limit=3)] == order[:3]
    page = store.active_page(HOME, now=NOW + timedelta(hours=1), limit=2)
    assert ([m.id for m in page.memories], page.total) == (order[:2], 4)
    every = store.active_page(HOME, now=NOW + timedelta(hours=1), limit=None)
    assert ([m.id for m in every.memories], every.total) == (order, 4)


def test_forget_erases_every_version_and_the_text_the_audit_kept(store: MemoryStore) -> None:
    first = note(store, "John lives in Taipei", keywords=["家"])
    second = store.supersede(HOME, first, "John lives in Tainan", author="j", via="tool", now=NOW)
    third = store.supersede(
        HOME, second.id, "Джон живёт в Хуаляне", author="j", via="tool", now=NOW
    )
    later = NOW + timedelta(minutes=5)
    erased = store.forget(HOME, third.id, by="mary", via="command", now=later)
    assert sorted(erased) == sorted([first, second.id, third.id])
    for memory_id in erased:
        with pytest.raises(NotFoundError):
            store.get(HOME, memory_id)
    trail = store.history(HOME, first)
    assert all(entry.detail is None for entry in trail[:-1])
    assert (trail[-1].action, trail[-1].actor, trail[-1].via, trail[-1].at) == (
        "forget",
        "mary",
        "command",
        later,
    )
    detail = trail[-1].detail
    assert detail == {"erased": [third.id, second.id, first]}  # newest first
    everything = json.dumps(
        [e.detail for e in store.recent_changes(HOME, limit=50)], ensure_ascii=False
    )
    for text in ("Taipei", "Tainan", "Хуаляне", "家"):
        assert text not in everything
        assert store.search(HOME, text, now=NOW) == []
    assert store.export(HOME) == [] and store.active(HOME, now=later) == []


def test_a_forgotten_id_stays_taken_and_cannot_be_forgotten_twice(store: MemoryStore) -> None:
    memory_id = note(store, "I drink tea")
    store.forget(HOME, memory_id, by="john", via="tool", now=NOW)
    assert note(store, "something new") > memory_id
    for unknown in (memory_id, 999, 10**30, -(10**30), -1, 0):
        with pytest.raises(NotFoundError):
            store.forget(HOME, unknown, by="john", via="tool", now=NOW)
        with pytest.raises(NotFoundError):
            store.get(HOME, unknown)
    for huge in (10**30, -(10**30)):
        with pytest.raises(NotFoundError):
            store.history(HOME, huge)
    with pytest.raises(NotFoundError):
        store.supersede(HOME, 10**30, "x", author="john", via="tool", now=NOW)


def test_forget_everywhere_finds_each_copy_of_a_text_and_erase_audits_it_as_forgotten(
    store: MemoryStore,
) -> None:
    tea = note(store, "I drink oolong", keywords=["茶"])
    theirs = note(store, "Mary drinks oolong", scope=GROUP)
    note(store, "John lives in Hualien")
    memories, audits = store.matching(lambda text: "oolong" in text or "茶" in text)
    assert sorted(memories) == sorted([tea, theirs]) and len(audits) == 2
    store.erase(memories, audits, by="owner", via="cli", now=NOW)
    assert store.matching(lambda text: "oolong" in text) == ([], [])
    trail = store.history(GROUP, theirs)
    assert [(e.action, e.actor, e.detail) for e in trail] == [
        ("add", "john", None),
        ("forget", "owner", {"erased": [theirs]}),
    ]


def test_a_failed_write_inside_a_batch_undoes_the_whole_batch(store: MemoryStore) -> None:
    kept = note(store, "kept")
    with pytest.raises(InvalidInputError), store.batch():
        note(store, "written then undone")
        store.forget(HOME, kept, by="john", via="tool", now=NOW)
        note(store, "x" * 501)
    assert [m.content for m in store.active(HOME, now=NOW)] == ["kept"]


def test_a_write_that_fails_inside_a_batch_is_undone_alone(store: MemoryStore) -> None:
    with store.batch():
        tea = note(store, "I drink tea")
        coffee = note(store, "I drink coffee")
        with pytest.raises(InvalidInputError):
            store.supersede(HOME, coffee, "I drink tea", author="john", via="tool", now=NOW)
        note(store, "Я пью кофе")
    assert sorted(m.content for m in store.active(HOME, now=NOW)) == [
        "I drink coffee",
        "I drink tea",
        "Я пью кофе",
    ]
    assert store.get(HOME, tea).status == "active"


def test_a_forget_inside_a_batch_is_erased_when_the_batch_ends(store: MemoryStore) -> None:
    memory_id = note(store, "Zanzibarquux lives at Qwertyplatz")
    with store.batch():
        store.forget(HOME, memory_id, by="john", via="tool", now=NOW)
        note(store, "another")
    assert store.search(HOME, "Zanzibarquux", now=NOW) == []
    assert [m.content for m in store.active(HOME, now=NOW)] == ["another"]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("John lives in Hualien", "hualien"),
        ("我每天早上喝美式咖啡", "咖啡"),
        ("明天下午三点开会", "开会"),
        ("Мама любит кофе", "кофе"),
        ("Mom's flight lands Thursday", "when does the flight land"),
    ],
)
def test_search_finds_a_memory_by_a_word_it_holds_in_any_script(
    store: MemoryStore, text: str, query: str
) -> None:
    memory_id = note(store, text)
    note(store, "something unrelated")
    note(store, text, scope=GROUP)
    assert [m.id for m in store.search(HOME, query, now=NOW)] == [memory_id]


def test_search_matches_keywords_too_and_respects_the_limit(store: MemoryStore) -> None:
    memory_id = note(store, "works at the hospital", keywords=["职业", "job"])
    assert [m.id for m in store.search(HOME, "职业", now=NOW)] == [memory_id]
    for n in range(5):
        note(store, f"tea fact {n}")
    assert len(store.search(HOME, "tea", now=NOW, limit=3)) == 3
    assert store.search(HOME, "   ", now=NOW) == []


def test_recent_changes_are_the_scopes_newest_audit_entries(store: MemoryStore) -> None:
    first = note(store, "one")
    second = note(store, "two")
    note(store, "elsewhere", scope=GROUP)
    store.forget(HOME, first, by="john", via="cli", now=NOW)
    changes = store.recent_changes(HOME, limit=2)
    assert [(e.action, e.memory_id) for e in changes] == [("forget", first), ("add", second)]


def test_export_then_import_elsewhere_round_trips_exactly(backend: Backend) -> None:
    store = backend.memories
    note(store, "John lives in Hualien", kind="profile", source=Source("s-1", 2))
    note(
        store,
        "我每天早上喝美式咖啡",
        keywords=["提神", "coffee"],
        expires_at=NOW + timedelta(days=30),
    )
    note(store, "Пароль от сейфа не храню здесь", kind="fact")
    store.forget(HOME, note(store, "temporary"), by="john", via="cli", now=NOW)
    lines = store.export(HOME)
    assert len(lines) == 3
    assert [json.loads(line)["id"] for line in lines] == sorted(
        json.loads(line)["id"] for line in lines
    )
    result = store.import_(GROUP, lines, by="mary", via="cli", now=NOW)
    assert len(result.added) == 3 and result.already_present == []
    copied = [json.loads(line) for line in store.export(GROUP)]
    originals = [json.loads(line) for line in lines]
    assert not {r["id"] for r in copied} & {r["id"] for r in originals}  # new ids
    for record in (*copied, *originals):
        del record["id"]  # ids are kept only when free, and these are taken
    assert copied == originals
    assert [e.action for e in store.history(GROUP, result.added[0])] == ["import"]
    found = store.search(GROUP, "提神", now=NOW)  # the index is kept in step on import
    assert [m.content for m in found] == ["我每天早上喝美式咖啡"]


def test_importing_what_is_already_there_changes_nothing(store: MemoryStore) -> None:
    note(store, "I drink tea")
    lines = store.export(HOME)
    result = store.import_(HOME, lines, by="john", via="cli", now=NOW)
    assert (result.added, len(result.already_present)) == ([], 1)
    assert store.export(HOME) == lines


def test_import_keeps_an_id_that_is_free(store: MemoryStore) -> None:
    line = json.dumps(
        {"id": 4242, "content": "Kept id", "author": "a", "created_at": "2026-01-01T00:00:00+00:00"}
    )
    assert store.import_(HOME, [line], by="john", via="cli", now=NOW).added == [4242]
    assert store.get(HOME, 4242).content == "Kept id"
    assert note(store, "written after the import") > 4242  # never given the kept id again


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
    assert store.active(HOME, now=NOW) == [] and store.recent_changes(HOME) == []
