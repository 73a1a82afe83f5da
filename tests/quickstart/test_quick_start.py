"""The README's quick start, word for word: its first shell blocks run on a fresh clone
of this repository, in a fresh login shell that has nothing but HOME and the system's
PATH (`env -i`), the key pointed at a local OpenAI-compatible server. It installs Lore
from the package index, so it takes a minute or two and stays out of `make check`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.openai_server import FakeOpenAI
from tests.readme_transcripts import README

pytestmark = pytest.mark.quickstart

ROOT = Path(__file__).resolve().parents[2]


def _quick_start() -> list[str]:
    """The README's shell blocks before its first section: the quick start."""
    first_screen = README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", first_screen, re.S)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    for _ in range(20):  # each turn asks twice: the reply, then extraction
        fake.reply("Hello from the model.")
    yield fake
    fake.stop()


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    target = tmp_path / "lore"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True)
    return target


def _fresh_shell(
    script: str, *, cwd: Path, home: Path, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    assignments = [f"{name}={value}" for name, value in env.items()]
    return subprocess.run(
        ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", *assignments, "bash", "-lc", script],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def test_the_quick_start_blocks_are_where_the_test_expects_them() -> None:
    make, with_key, on_path = _quick_start()
    assert make.startswith("make chat") and "make check" in make
    assert "export OPENAI_API_KEY=sk-…" in with_key and "make chat" in with_key
    assert "export PATH=" in on_path and "lore chat" in on_path


def test_with_a_key_make_chat_installs_lore_and_chats_and_lore_is_on_path_after(
    clone: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    _, with_key, on_path = _quick_start()
    home = tmp_path / "home"
    home.mkdir()
    script = with_key.replace("sk-…", "sk-quickstart")
    done = _fresh_shell(
        f"cd {clone}\n{script}", cwd=clone, home=home, stdin="hi\n", OPENAI_BASE_URL=server.base_url
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Hello from the model." in done.stdout
    assert f'export PATH="{clone}/.venv/bin:$PATH"' in done.stdout  # the line to keep
    assert server.requests[0]["messages"][-1]["content"] == "hi"

    # A new shell: `lore` is found the way the README puts it on PATH.
    done = _fresh_shell(
        f"cd {clone}\n{on_path}",
        cwd=clone,
        home=home,
        stdin="and again\n",
        OPENAI_API_KEY="sk-quickstart",
        OPENAI_BASE_URL=server.base_url,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "Hello from the model."
    assert (home / ".local/share/lore/config.toml").exists()
    done = _fresh_shell(f"cd {clone}\nmake -s path", cwd=clone, home=home)
    assert done.stdout == f'export PATH="{clone}/.venv/bin:$PATH"\n'


def test_without_a_key_make_chat_says_what_it_will_compile_and_waits_for_ctrl_c(
    clone: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    make = subprocess.Popen(
        ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "bash", "-lc", "make chat"],
        cwd=clone,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert make.stdout is not None
    try:
        shown = ""
        deadline = time.monotonic() + 900
        while "and run make chat again" not in shown and time.monotonic() < deadline:
            line = make.stdout.readline()
            if not line:
                break
            shown += line
    finally:
        os.killpg(make.pid, signal.SIGINT)  # the Ctrl+C it offers, before any compile
        make.wait(timeout=60)
    assert "compiles llama.cpp from source" in shown and "45 minutes" in shown, shown
    assert "export OPENAI_API_KEY=" in shown and "ollama" in shown.lower()
    assert not (clone / ".venv" / ".local").exists()
