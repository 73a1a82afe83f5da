"""memory_search: snippets with their source, only from this conversation, in any language."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from lore.core.tools import ToolContext, ToolRegistry, ToolResult
from lore.llm.base import ToolCall
from lore.llm.scripted import ScriptedProvider
from lore.messages import Message, Role
from lore.ports.memories import Source
from lore.runtime import Runtime
from lore.search import searcher
from lore.search.feature import search_feature
from lore.search.tool import MemorySearchTool
from tests.postgres_server import storage  # noqa: F401  (each test on both backends)

HOME = "cli:default"
GROUP = "line:group:family"
SESSION = "5e55104a" * 4


def context(lore: Runtime, scope: str = HOME) -> ToolContext:
    return ToolContext(scope, "john", "live-1", 0, lore.clock.now(), "Asia/Taipei")


async def call(lore: Runtime, ctx: ToolContext, **args: object) -> ToolResult:
    registry = ToolRegistry(search_feature(lore).tools)
    return await registry.call(ToolCall("c1", "memory_search", json.dumps(args)), ctx)


def archive_session(lore: Runtime, scope: str, turns: list[tuple[Role, str]]) -> None:
    archive_dated(lore, SESSION, "2026-11-20T02:00:00+00:00", turns, scope=scope, slug="api-design")


def test_the_tool_has_the_contract_the_design_names(lore: Runtime) -> None:
    (tool,) = search_feature(lore).tools

    assert tool.name == "memory_search"
    assert set(tool.parameters["properties"]) == {"query", "limit", "when", "after", "before"}
    assert tool.parameters["required"] == ["query"]
    assert "session_history" in tool.description and "remember" in tool.description


async def test_a_result_names_its_source_and_how_to_read_the_session(lore: Runtime) -> None:
    archive_session(
        lore,
        HOME,
        [
            ("user", "Should the public API be REST or GraphQL?"),
            ("assistant", "REST: the clients are simple and caching is easier."),
            ("user", "Agreed, we go with REST and version it under /v1."),
        ],
    )

    result = await call(lore, context(lore), query="what did we decide about the API?")

    assert not result.is_error
    (line,) = [x for x in result.content.splitlines() if "version it under /v1" in x]
    assert line.startswith("[") and "user: Agreed" in line  # one line: when, who, what, where
    assert "we go with REST and version it under /v1" in result.content
    assert f'session_history(session_id="{SESSION}", offset=0)' in result.content
    assert "2026-11-20 10:00" in result.content  # the message's time, in Asia/Taipei


async def test_memories_are_found_with_their_id(lore: Runtime) -> None:
    lore.memory.remember(
        HOME, "John's blood type is O+", author="john", via="cli", now=lore.clock.now()
    )

    result = await call(lore, context(lore), query="blood type")

    assert "memory #1" in result.content and "John's blood type is O+" in result.content


async def test_a_memory_found_by_search_can_then_be_forgotten_by_its_id(lore: Runtime) -> None:
    # Beyond the block's window ("N older memories not shown") search is the only way
    # the model sees an id; an id it was shown there is one it may forget.
    memory, _ = lore.memory.remember(
        HOME, "John's blood type is O+", author="john", via="cli", now=lore.clock.now()
    )
    ctx = context(lore)
    forget = ToolCall("c2", "forget", json.dumps({"id": memory.id}))
    assert (await lore.tools.call(forget, ctx)).is_error  # not shown yet

    await call(lore, ctx, query="blood type")
    result = await lore.tools.call(forget, ctx)

    assert not result.is_error, result.content
    assert lore.memory.active(HOME, now=lore.clock.now()) == []


async def test_results_never_come_from_another_conversation(lore: Runtime) -> None:
    now = lore.clock.now()
    lore.memory.remember(
        GROUP, "Grandma's spare key is under the blue pot", author="amy", via="cli", now=now
    )
    lore.memory.remember(
        HOME, "John keeps a spare bike key in the drawer", author="john", via="cli", now=now
    )
    searcher(lore).refresh()
    searcher(lore).embed_pending()

    result = await call(lore, context(lore), query="where is the spare key?")

    assert "bike key" in result.content
    assert "blue pot" not in result.content


async def test_the_owner_searches_memory_md_and_a_group_does_not(lore: Runtime) -> None:
    lore.workspace.root.joinpath("MEMORY.md").write_text(
        "# Memory\n\n## Work\n\nThe deploy window is Thursday after 18:00.\n", encoding="utf-8"
    )

    mine = await call(lore, context(lore), query="deploy window")
    theirs = await call(lore, context(lore, GROUP), query="deploy window")

    assert "MEMORY.md:5" in mine.content and "Work: The deploy window" in mine.content
    assert "deploy window is Thursday" not in theirs.content


async def test_nothing_found_is_said_plainly(lore: Runtime) -> None:
    result = await call(lore, context(lore), query="submarine")

    assert not result.is_error
    assert result.content == "Nothing found for 'submarine' in this conversation's memory."


@pytest.mark.parametrize(
    "args", [{}, {"query": "  "}, {"query": "x", "limit": 0}, {"query": "x", "limit": 99}]
)
async def test_bad_arguments_are_an_error_for_the_model(
    lore: Runtime, args: dict[str, object]
) -> None:
    result = await call(lore, context(lore), **args)

    assert result.is_error and result.content.startswith("Error:")


async def test_the_model_can_search_within_a_turn(lore: Runtime, model: ScriptedProvider) -> None:
    now = lore.clock.now()
    lore.memory.remember(
        HOME, "The guest wifi is called BlueFox", author="john", via="cli", now=now
    )
    model.tool_call("memory_search", {"query": "guest wifi"}).reply("It's BlueFox.")

    await lore.conversation(HOME, emit=lambda event: None).send("what was the guest wifi?")

    tool_result = model.requests[1].messages[-1]
    assert tool_result["role"] == "tool"
    assert "The guest wifi is called BlueFox" in tool_result["content"]


def test_the_tool_reports_what_search_finds(lore: Runtime) -> None:
    lore.memory.remember(
        HOME, "Standup moved to 9:30", author="john", via="cli", now=lore.clock.now()
    )

    hits = MemorySearchTool(lore).search("standup", context(lore), limit=3)

    assert [hit.entry.text for hit in hits] == ["Standup moved to 9:30"]


async def test_what_a_turn_wrote_is_embedded_in_the_background(
    lore: Runtime, model: ScriptedProvider
) -> None:
    model.tool_call("remember", {"content": "John's train leaves at 7:40"}).reply("Noted.")

    await lore.conversation(HOME, emit=lambda event: None).send("my train is at 7:40")
    await lore.background.drain()

    stats = searcher(lore).index.stats()
    # The memory, and the turn's two messages in the live session.
    assert (stats.entries["memory"], stats.entries["message"]) == (1, 2)
    assert (stats.vectors, stats.pending_vectors) == (3, 0)


def archive_dated(
    lore: Runtime,
    session_id: str,
    stamp: str,
    turns: list[tuple[Role, str]],
    *,
    scope: str = HOME,
    slug: str = "trip",
) -> None:
    """A session closed an hour after `stamp`, through the runtime's own sessions store."""
    messages: list[Message] = [
        {"role": role, "content": text, "timestamp": stamp} for role, text in turns
    ]
    start = datetime.fromisoformat(stamp)
    session = lore.sessions.live(scope)
    session.reset(session_id)
    session.append(messages, touch=False)
    session.update_meta(created_at=stamp, updated_at=stamp)
    end = start.replace(hour=start.hour + 1)
    lore.sessions.close(session, reason="new", ended_at=end, zone=UTC, slug=slug)


@pytest.fixture
def two_trips(lore: Runtime) -> Runtime:
    archive_dated(
        lore, "a" * 32, "2026-10-05T02:00:00+00:00", [("user", "We booked the Kyoto trip hotel.")]
    )
    archive_dated(
        lore, "b" * 32, "2026-11-25T02:00:00+00:00", [("user", "We booked the Osaka trip hotel.")]
    )
    return lore


@pytest.mark.parametrize(
    "args",
    [
        {"when": "last week"},  # the clock is Monday 2026-11-30: last week is 23-29 November
        {"when": "上周"},
        {"when": "на прошлой неделе"},
        {"after": "2026-11-01"},
        {"when": "2026-11"},
    ],
)
async def test_a_time_range_keeps_only_what_was_said_then(
    two_trips: Runtime, args: dict[str, str]
) -> None:
    result = await call(two_trips, context(two_trips), query="trip hotel", **args)

    assert not result.is_error, result.content
    assert "Osaka" in result.content and "Kyoto" not in result.content
    assert "2026-11-25" in result.content  # the date it was said, on its line


async def test_before_keeps_what_was_said_earlier(two_trips: Runtime) -> None:
    result = await call(two_trips, context(two_trips), query="trip hotel", before="2026-11-01")

    assert "Kyoto" in result.content and "Osaka" not in result.content


async def test_an_unreadable_time_is_one_clear_error(two_trips: Runtime) -> None:
    result = await call(two_trips, context(two_trips), query="trip hotel", when="someday")

    assert result.is_error
    assert "could not read the time 'someday'" in result.content
    assert "\n" not in result.content.strip()


async def test_each_result_is_one_line_with_date_speaker_and_where_to_read_more(
    two_trips: Runtime,
) -> None:
    result = await call(two_trips, context(two_trips), query="trip hotel")

    lines = [line for line in result.content.splitlines() if line.startswith("[")]
    assert len(lines) == 2
    for line in lines:
        assert line.startswith(("[1] 2026-", "[2] 2026-"))
        assert "user: We booked the" in line and "session_history(session_id=" in line


async def test_a_turn_is_found_through_the_fact_extracted_from_it(lore: Runtime) -> None:
    # The turn says "she" and "there"; the memory extracted from it names who and where.
    lore.memory.remember(
        HOME,
        "Amy's grandmother lives in Tainan",
        author="john",
        via="cli",
        now=lore.clock.now(),
        source=Source(SESSION, 1),
    )
    archive_session(
        lore,
        HOME,
        [("user", "hi"), ("user", "She moved there last spring, near the old temple.")],
    )
    searcher(lore).refresh(files=True)

    hits = searcher(lore).search("grandmother Tainan", HOME, mode="text", limit=5)

    turns = [h.entry.text for h in hits if h.entry.kind == "message"]
    assert turns and turns[0].startswith("She moved there")


async def test_a_message_about_another_time_is_found_in_that_range(lore: Runtime) -> None:
    # Said on 5 October, about September ("last month").
    archive_dated(
        lore,
        "c" * 32,
        "2026-10-05T02:00:00+00:00",
        [("user", "Last month we visited Kyoto for the temple festival.")],
    )

    september = await call(lore, context(lore), query="Kyoto", when="2026-09")
    august = await call(lore, context(lore), query="Kyoto", when="2026-08")

    assert "visited Kyoto" in september.content and "2026-10-05" in september.content
    assert "visited Kyoto" not in august.content


async def test_a_memory_about_last_year_is_found_in_last_year(lore: Runtime) -> None:
    now = lore.clock.now()  # 2026
    lore.memory.remember(HOME, "We moved to Taipei last year", author="john", via="cli", now=now)

    then = await call(lore, context(lore), query="moved to Taipei", when="2025")
    before = await call(lore, context(lore), query="moved to Taipei", when="2024")

    assert "memory #1" in then.content
    assert "Nothing found" in before.content
