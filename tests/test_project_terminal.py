"""`lore chat --project DIR` in a real terminal (a pty): reads run, writes ask, y applies."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from lore.backends.local.live import LiveSession
from tests.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _env(home: Path, server: FakeOpenAI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "LORE"))}
    env.update(
        LORE_HOME=str(home),
        OPENAI_API_KEY="sk-test-key",
        OPENAI_BASE_URL=server.base_url,
        LORE_MODEL="openai/gpt-4o-mini",
        LORE_TIMEZONE="Asia/Taipei",
        LORE_USER="john",
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    return env


def _shown(text: str) -> str:
    """A pattern for `text` as the terminal draws it: streamed pieces may have escape
    sequences (colour, cursor moves) between them."""
    gap = r"(?:\x1b\[[0-9;?]*[A-Za-z]|\r|\n)*"
    return gap.join(re.escape(char) for char in text)


def _lore(home: Path, server: FakeOpenAI, *args: str) -> pexpect.spawn[str]:
    return pexpect.spawn(
        sys.executable,
        ["-m", "lore", *args],
        env=_env(home, server),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )


def test_read_runs_write_asks_and_yes_applies_it(
    home: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    project = tmp_path / "garden"
    project.mkdir()
    (project / "README.md").write_text("# Garden\n\nWater the tomatoes daily.\n")
    (project / "TODO.md").write_text("- buy seeds\n")
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        "[extraction]\nenabled = false\n[session_memory]\nenabled = false\n"
    )
    server.tool_call("read_file", {"path": "README.md"})
    server.tool_call(
        "write_file", {"path": "TODO.md", "content": "- buy seeds\n- water the tomatoes\n"}
    )
    server.reply("Added a line to TODO.md.")

    chat = _lore(home, server, "chat", "--project", str(project))
    chat.expect(f"project {project}")
    chat.expect("›")
    chat.sendline("read README.md in my project and add a line to TODO.md")
    chat.expect(r"\? write_file wants to overwrite TODO.md")
    chat.expect(r"\+- water the tomatoes")
    chat.expect(r"Allow\? \[y/N\]")
    assert (project / "TODO.md").read_text() == "- buy seeds\n"  # nothing before the answer
    chat.sendline("y")
    chat.expect("approved")
    chat.expect(_shown("Added a line to TODO.md."))
    chat.expect("›")
    chat.sendcontrol("d")
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0

    assert (project / "TODO.md").read_text() == "- buy seeds\n- water the tomatoes\n"
    read_result = server.requests[1]["messages"][-1]
    assert read_result["role"] == "tool" and "Water the tomatoes daily." in read_result["content"]
    session = LiveSession(home / "sessions", "cli:default")
    assert session.meta.extra["project"] == str(project)
    tools = [m for m in session.messages if m["role"] == "tool"]
    assert [(t["name"], t["decision"]) for t in tools] == [
        ("read_file", {"trust": "allow", "outcome": "allowed"}),
        ("write_file", {"trust": "ask", "outcome": "approved", "by": "john (terminal)"}),
    ]


def test_answering_no_leaves_the_file_alone(home: Path, server: FakeOpenAI, tmp_path: Path) -> None:
    project = tmp_path / "garden"
    project.mkdir()
    (project / "TODO.md").write_text("- buy seeds\n")
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[extraction]\nenabled = false\n")
    server.tool_call("write_file", {"path": "TODO.md", "content": "erased\n"})
    server.reply("Understood, I left it.")

    chat = _lore(home, server, "chat", "--project", str(project))
    chat.expect("›")
    chat.sendline("clear my todo")
    chat.expect(r"Allow\? \[y/N\]")
    chat.sendline("n")
    chat.expect("declined")
    chat.expect(_shown("Understood, I left it."))
    chat.expect("›")
    chat.sendcontrol("d")
    chat.expect(pexpect.EOF)
    assert (project / "TODO.md").read_text() == "- buy seeds\n"
    assert "declined by john (terminal)" in server.requests[1]["messages"][-1]["content"]
