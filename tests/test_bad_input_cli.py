"""Bytes that are not UTF-8 text, NUL bytes and very long lines, through the real CLI:
one clear line and nothing changed, or the text handled and said so; never a traceback,
never a message cut or dropped unseen. (Run in this process, as tests/lore_command.py
describes.)"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lore_command import lore_bytes
from tests.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _lore(
    home: Path, server: FakeOpenAI, *args: bytes | str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[extraction]\nenabled = false\n")
    env = dict(
        LORE_HOME=str(home),
        OPENAI_API_KEY="sk-test-key",
        OPENAI_BASE_URL=server.base_url,
        LORE_MODEL="openai/gpt-4o-mini",
        LORE_USER="anna",
    )
    return lore_bytes(*args, env=env, stdin=stdin if stdin is not None else b"")


def _refused(done: subprocess.CompletedProcess[bytes]) -> None:
    err = done.stderr.decode()
    assert done.returncode == 1 and done.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith("lore: ") and "UTF-8" in err, err


@pytest.mark.parametrize(
    "args",
    [
        (b"chat", b"-m", b"caf\xff latte"),
        (b"memory", b"add", "Аня любит чай ".encode() + b"\xfe"),
        (b"chat", b"--session", b"telegram:\xff\xfe", b"-m", "你好".encode()),
        (b"memory", b"list", b"--session", b"cli:\xc3"),
    ],
    ids=["chat -m", "memory add", "session key", "truncated character in a key"],
)
def test_invalid_utf8_in_an_argument_is_one_line_and_changes_nothing(
    home: Path, server: FakeOpenAI, args: tuple[bytes, ...]
) -> None:
    _refused(_lore(home, server, *args))
    assert server.requests == []
    assert not (home / "lore.db").exists() and not (home / "sessions").exists()


def test_invalid_utf8_piped_in_is_replaced_and_said(home: Path, server: FakeOpenAI) -> None:
    server.reply("Понял.")
    done = _lore(home, server, "chat", stdin="Привет, ".encode() + b"\xff\xfe" + " 世界\n".encode())
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "Понял.\n"
    assert "line 1" in done.stderr.decode() and "Traceback" not in done.stderr.decode()
    assert server.requests[0]["messages"][-1]["content"] == "Привет, \ufffd\ufffd 世界"


def test_a_nul_byte_does_not_cut_a_piped_message(home: Path, server: FakeOpenAI) -> None:
    server.reply("ok")
    done = _lore(home, server, "chat", stdin=b"before\x00after the NUL\n")
    assert done.returncode == 0, done.stderr.decode()
    assert server.requests[0]["messages"][-1]["content"] == "before\ufffdafter the NUL"
    assert "line 1" in done.stderr.decode()


def test_a_200_kb_piped_line_is_sent_whole(home: Path, server: FakeOpenAI) -> None:
    server.reply("long one")
    line = "日本語とрусский " * 8_000  # about 200 KB of UTF-8
    assert len(line.encode()) > 200_000
    done = _lore(home, server, "chat", stdin=line.encode() + b"\n")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "long one\n"
    assert server.requests[0]["messages"][-1]["content"] == line


def test_each_piped_line_is_one_turn(home: Path, server: FakeOpenAI) -> None:
    server.reply("one").reply("two")
    done = _lore(home, server, "chat", stdin="第一\n\nвторое\n".encode())
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "one\ntwo\n"
    assert [r["messages"][-1]["content"] for r in server.requests] == ["第一", "второе"]
