"""`lore.adapters.langchain` under the real langchain-core: the chat message history is
Lore's transcript of the scope (read again by another open), and the retriever's
documents are `Memory.search`'s hits with their provenance."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever

import lore
from lore.adapters.langchain import LoreChatMessageHistory, LoreRetriever
from lore.errors import InvalidInputError


def test_the_history_is_lores_transcript_across_two_opens(home: Path) -> None:
    said = [
        SystemMessage("Be brief."),
        HumanMessage("Я живу в Казани."),
        AIMessage(
            "",
            tool_calls=[{"name": "remember", "args": {"text": "lives in Kazan"}, "id": "c1"}],
        ),
        ToolMessage("Noted #1", tool_call_id="c1"),
        AIMessage("Запомнил: Казань."),
    ]
    with lore.Memory(home=home, scope="api:ivan") as memory:
        history = LoreChatMessageHistory(memory)
        assert isinstance(history, BaseChatMessageHistory)
        history.add_messages(said[:2])
        history.add_messages(said[2:])
    with lore.Memory(home=home, scope="api:ivan") as memory:
        history = LoreChatMessageHistory(memory)
        assert history.messages == said
        transcript = memory.runtime.session("api:ivan").messages
        assert LoreChatMessageHistory(memory, "api:other").messages == []
    assert [(m["role"], m["content"]) for m in transcript] == [
        ("system", "Be brief."),
        ("user", "Я живу в Казани."),
        ("assistant", ""),
        ("tool", "Noted #1"),
        ("assistant", "Запомнил: Казань."),
    ]
    assert transcript[2]["tool_calls"] == [
        {"id": "c1", "name": "remember", "arguments": '{"text": "lives in Kazan"}'}
    ]
    assert transcript[3]["tool_call_id"] == "c1"


def test_clear_archives_and_a_lore_chat_turn_reads_as_messages(home: Path) -> None:
    with lore.Memory(home=home) as memory:
        memory.runtime.session(memory.scope).append(
            [
                {"role": "user", "content": "我住在花莲", "author": "john"},
                {"role": "assistant", "content": "好的"},
            ]
        )
        history = LoreChatMessageHistory(memory)
        assert history.messages == [HumanMessage("我住在花莲"), AIMessage("好的")]
        history.add_user_message("还有别的吗？")
        history.clear()
        assert history.messages == []
        [archived] = memory.runtime.sessions.archive.entries()
        assert archived.message_count == 3  # nothing said is lost


async def test_the_async_history_over_async_memory(home: Path) -> None:
    async with lore.AsyncMemory(home=home) as memory:
        history = LoreChatMessageHistory(memory)
        await history.aadd_messages([HumanMessage("hello"), AIMessage("hi")])
        assert await history.aget_messages() == [HumanMessage("hello"), AIMessage("hi")]
        await history.aclear()
        assert await history.aget_messages() == []


def test_the_retriever_returns_search_hits_with_provenance(home: Path) -> None:
    with lore.Memory(home=home, scope="api:alice") as memory:
        hualien = memory.remember("Alice lives in Hualien", kind="profile")
        memory.remember("Alice drinks an americano every morning", kind="preference")
        memory.remember("爱丽丝的女儿叫美美", kind="relation")
        retriever = LoreRetriever(memory=memory, limit=2)
        assert isinstance(retriever, BaseRetriever)
        [document, *_] = retriever.invoke("Hualien")
        assert document.page_content == "Alice lives in Hualien"
        assert document.id == f"memory #{hualien.id}"
        assert document.metadata["source"] == {"kind": "memory", "memory_id": hualien.id}
        assert document.metadata["scope"] == "api:alice" and document.metadata["score"] > 0
        assert retriever.invoke("美美")[0].page_content == "爱丽丝的女儿叫美美"
        assert LoreRetriever(memory=memory, scope="api:bob").invoke("Hualien") == []
        assert len(retriever.invoke("Alice")) == 2


async def test_the_retriever_over_async_memory(home: Path) -> None:
    async with lore.AsyncMemory(home=home) as memory:
        await memory.remember("Иван живёт в Казани")
        retriever = LoreRetriever(memory=memory)
        [document] = await retriever.ainvoke("Казани")
        assert document.page_content == "Иван живёт в Казани"
        with pytest.raises(InvalidInputError, match="ainvoke"):
            retriever.invoke("Казани")


def test_bad_input_is_refused_and_stores_nothing(home: Path) -> None:
    with lore.Memory(home=home) as memory:
        history = LoreChatMessageHistory(memory)
        with pytest.raises(InvalidInputError, match="LangChain messages"):
            history.add_messages([HumanMessage("kept?"), "not a message"])  # type: ignore[list-item]
        assert history.messages == []
        with pytest.raises(InvalidInputError, match="some words"):
            LoreRetriever(memory=memory).invoke("  ")
        with pytest.raises(ValueError, match="limit"):
            LoreRetriever(memory=memory, limit=0)
