"""Live turns are searchable before their session is archived: each turn's messages join
the index after it (only the new ones, so earlier vectors are kept), never another
conversation's, and archiving the session swaps them for its transcript's entries."""

from __future__ import annotations

from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime
from lore.search import searcher
from lore.sessions.closing import close_session

HOME = "cli:default"
OTHER = "telegram:99"


def texts(lore: Runtime, query: str, scope: str = HOME) -> list[str]:
    return [h.entry.text for h in searcher(lore).search(query, scope, mode="text")]


def live_entry_ids(lore: Runtime, scope: str = HOME) -> list[int]:
    session_id = lore.session(scope).meta.session_id
    hits = searcher(lore).search("kayak", scope, mode="text", limit=20)
    return sorted(h.entry.id for h in hits if h.entry.source == session_id)


async def test_a_turn_of_the_live_session_is_found_before_it_is_archived(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("A kayak trip on Sun Moon Lake sounds lovely.")
    await lore.conversation(HOME, emit=lambda event: None).send(
        "We booked the kayak trip for Saturday"
    )
    await lore.background.drain()

    found = texts(lore, "kayak")

    assert "We booked the kayak trip for Saturday" in found
    assert "A kayak trip on Sun Moon Lake sounds lovely." in found
    assert texts(lore, "kayak", OTHER) == []


async def test_each_turn_adds_only_its_own_messages(lore: Runtime, model: ScriptedProvider) -> None:
    conversation = lore.conversation(HOME, emit=lambda event: None)
    model.reply("Kayak noted.")
    await conversation.send("The kayak is red")
    await lore.background.drain()
    first = live_entry_ids(lore)
    model.reply("A second kayak, then.")
    await conversation.send("We bought another kayak")
    await lore.background.drain()

    second = live_entry_ids(lore)

    assert len(first) == 2 and len(second) == 4
    assert set(first) <= set(second)  # kept as they were: their vectors stay


async def test_archiving_swaps_the_live_entries_for_the_transcripts(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.reply("Kayak it is.")
    await lore.conversation(HOME, emit=lambda event: None).send("Let's take the kayak")
    await lore.background.drain()
    session_id = lore.session(HOME).meta.session_id

    close_session(lore, HOME)
    searcher(lore).refresh(files=True)
    hits = searcher(lore).search("kayak", HOME, mode="text")

    assert sorted(h.entry.text for h in hits) == ["Kayak it is.", "Let's take the kayak"]
    assert {h.entry.source for h in hits} == {session_id}


async def test_a_rebuild_indexes_the_live_sessions_too(
    lore: Runtime, model: ScriptedProvider
) -> None:
    from lore.search.rebuild import rebuild

    model.reply("Noted.")
    await lore.conversation(HOME, emit=lambda event: None).send("The kayak club meets on Sundays")
    await lore.background.drain()

    rebuild(lore, vectors=False)

    assert texts(lore, "kayak")[0] == "The kayak club meets on Sundays"


def test_a_live_session_in_russian_is_found_by_another_word_form(lore: Runtime) -> None:
    session = lore.session(HOME)
    session.append(
        [
            {"role": "user", "content": "Мы купили байдарку на озеро", "author": "Иван"},
            {"role": "assistant", "content": "Отличная покупка!"},
        ]
    )

    searcher(lore).index_live(HOME)

    # The reply comes second: it matches through its neighbour, at a lower weight.
    assert texts(lore, "байдарка") == ["Мы купили байдарку на озеро", "Отличная покупка!"]
