"""Whatever the user saw is in the transcript after any crash: what they said is written
before the model is asked, and each streamed chunk before it is shown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lore.config import load_config
from lore.runtime import build

# A chat turn whose model streams part of a reply and then hangs: the test kills the
# process (SIGKILL or SIGTERM) right after the user has seen the text.
_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from lore.config import load_config
    from lore.events import TextDelta
    from lore.llm.base import Completion, TextChunk
    from lore.runtime import build

    class Hanging:
        name = "hanging"
        context_window = 32000
        supports_tools = True

        async def stream(self, request):
            for chunk in ["The capital ", "of Japan ", "is Tokyo."]:
                yield TextChunk(chunk)
            await asyncio.sleep(600)
            yield Completion(text="never")

        async def aclose(self):
            pass

    def show(event):
        if isinstance(event, TextDelta):
            sys.stdout.write(event.text)
            sys.stdout.flush()
            if event.text.endswith("Tokyo."):
                print("\\n<shown>", flush=True)

    async def main():
        lore = build(load_config(flags={"home": sys.argv[1], "model": "scripted",
                                        "extraction.enabled": False}), provider=Hanging())
        lore.memory.remember("cli:default", "John is learning Japanese", author="john",
                             via="cli", now=lore.clock.now())
        await lore.conversation("cli:default", emit=show).send("What is the capital of Japan?")

    asyncio.run(main())
    """
)


def _crash_mid_reply(home: Path, sig: signal.Signals) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(home)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    for line in child.stdout:
        if "<shown>" in line:
            break
    os.kill(child.pid, sig)
    child.wait()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_reply_the_user_saw_survives_the_process_being_killed(
    tmp_path: Path, sig: signal.Signals
) -> None:
    home = tmp_path / "home"
    _crash_mid_reply(home, sig)
    lore = build(load_config(flags={"home": str(home), "model": "scripted"}))
    user, reply = lore.session("cli:default").messages
    assert user["role"] == "user" and user["content"] == "What is the capital of Japan?"
    assert reply["role"] == "assistant" and reply["content"] == "The capital of Japan is Tokyo."
    assert reply["interrupted"] is True
    assert reply["why"] == {"memories": [1]}  # what it rested on survives with it
    # Recovered once: opening the session again adds nothing.
    assert len(lore.session("cli:default").messages) == 2


async def test_the_next_turn_sees_the_interrupted_reply(tmp_path: Path) -> None:
    from lore.llm.scripted import ScriptedProvider

    home = tmp_path / "home"
    _crash_mid_reply(home, signal.SIGKILL)
    model = ScriptedProvider().reply("Yes, Tokyo.")
    config = load_config(flags={"home": str(home), "model": "scripted"})
    lore = build(config, provider=model)
    await lore.conversation("cli:default", emit=lambda event: None).send("Tokyo, you said?")
    sent = model.requests[0].messages
    assert [m["content"] for m in sent] == [
        "What is the capital of Japan?",
        "The capital of Japan is Tokyo.",
        "Tokyo, you said?",
    ]
    await lore.aclose()
