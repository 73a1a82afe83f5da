"""/new killed at every step: nothing is lost, the index always parses, the next start heals.

Each step of `close_session` is crashed twice: in-process (an injected exception) and for
real (a subprocess that SIGKILLs itself at that step). Afterwards every message is in the
live session or an archived transcript, every index line parses, and recovery (run at
the next start) leaves exactly one indexed archive and a fresh live session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lore.backends.local.sessions import STEPS
from lore.llm.base import Message
from lore.ports.sessions import FaultHook
from lore.runtime import Runtime
from lore.sessions.closing import close_if_idle, close_session, recover_interrupted
from tests import crash_runs

KEY = "cli:default"
MESSAGES: list[Message] = [
    {"role": "user", "content": "我住在花莲", "author": "john"},
    {"role": "assistant", "content": "好的"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "remember", "arguments": '{"content": "花莲"}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "remember", "content": "Remembered as #1."},
    {"role": "user", "content": "Запомни: билеты в пятницу", "author": "john"},
    {"role": "assistant", "content": "Запомнил."},
]


class Crash(Exception):
    """Stands in for the process dying at a step."""


def _crash_at(step: str) -> FaultHook:
    def fault(name: str) -> None:
        if name == step:
            raise Crash(step)

    return fault


def _index_lines(lore: Runtime) -> list[dict[str, object]]:
    index = lore.config.sessions_dir / "_sessions.jsonl"
    if not index.exists():
        return []
    return [json.loads(line) for line in index.read_text(encoding="utf-8").splitlines()]


def _archived_messages(lore: Runtime) -> list[Message]:
    found: list[Message] = []
    for path in (lore.config.sessions_dir / "archive").glob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        found.extend(json.loads(line) for line in lines[1:])
    return found


def _assert_nothing_lost(lore: Runtime) -> None:
    live = lore.session(KEY).messages
    archived = _archived_messages(lore)
    for message in MESSAGES:
        assert message in live or message in archived, message


def _assert_healed(lore: Runtime, old_id: str) -> None:
    """After recovery and (if needed) a second /new: one archive, one fresh session."""
    archive = lore.sessions.archive
    if lore.session(KEY).meta.session_id == old_id:
        close_session(lore, KEY)
    (entry,) = archive.entries()
    assert entry.session_id == old_id
    messages, total = archive.read_messages(entry)
    assert messages == MESSAGES and total == len(MESSAGES)
    assert lore.session(KEY).messages == []
    assert lore.session(KEY).meta.session_id != old_id
    assert list((lore.config.sessions_dir / "archive").glob(".*.tmp")) == []
    assert len(list((lore.config.sessions_dir / "archive").glob("*.jsonl"))) == 1
    assert {line["session_id"] for line in _index_lines(lore)} == {old_id}


@pytest.mark.parametrize("step", STEPS)
def test_an_exception_at_any_step_loses_nothing_and_heals(lore: Runtime, step: str) -> None:
    session = lore.session(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close_session(lore, KEY, fault=_crash_at(step))
    _assert_nothing_lost(lore)
    _index_lines(lore)  # every line parses
    recover_interrupted(lore, min_age=0)
    _assert_nothing_lost(lore)
    _assert_healed(lore, old_id)


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from lore.runtime import Runtime, build
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.sessions.closing import close_session

    home, step = sys.argv[1], sys.argv[2]

    def fault(name):
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    config = load_config(env={"LORE_HOME": home, "USER": "john"},
                         flags={"model": "scripted", "timezone": "Asia/Taipei"})
    close_session(build(config, provider=ScriptedProvider()), "cli:default", fault=fault)
    """
)


@pytest.mark.parametrize("step", STEPS)
def test_a_process_killed_at_any_step_loses_nothing_and_heals(
    lore: Runtime, home: Path, step: str
) -> None:
    session = lore.session(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(home), step],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    _assert_nothing_lost(lore)
    _index_lines(lore)
    recover_interrupted(lore, min_age=0)
    _assert_healed(lore, old_id)


def _killed_closing(home: Path, step: str) -> None:
    src = str(Path(__file__).resolve().parents[1] / "src")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(home), step],
        env={**os.environ, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.mark.parametrize("second", [None, "archive_tmp_written", "archive_written"])
def test_a_new_killed_after_indexing_then_again_reclosing_leaves_each_message_once(
    lore: Runtime, home: Path, second: str | None
) -> None:
    # The first /new dies after indexing, before clearing the session; the conversation
    # goes on; a second /new dies before, while or after rewriting the transcript.
    lore.session(KEY).append(MESSAGES[:2])
    _killed_closing(home, "index_written")
    lore.session(KEY).append(MESSAGES[2:])
    if second is not None:
        _killed_closing(home, second)
    recover_interrupted(lore, min_age=0)
    recover_interrupted(lore, min_age=0)
    seen = crash_runs.messages_once(home)
    assert [seen[str(m["content"])] for m in MESSAGES] == [1] * len(MESSAGES)
    assert _archived_messages(lore) + lore.session(KEY).messages == MESSAGES


def test_a_crash_after_indexing_is_finished_at_the_next_start(lore: Runtime) -> None:
    session = lore.session(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close_session(lore, KEY, fault=_crash_at("index_written"))
    assert lore.session(KEY).meta.session_id == old_id  # not cleared yet
    pending = recover_interrupted(lore, min_age=0)
    assert [entry.session_id for entry in pending] == [old_id]  # its summary is still due
    assert lore.session(KEY).messages == []
    assert lore.session(KEY).meta.session_id != old_id


def test_messages_added_after_a_crash_are_archived_by_the_next_close(lore: Runtime) -> None:
    session = lore.session(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close_session(lore, KEY, fault=_crash_at("archive_written"))
    later: Message = {"role": "user", "content": "one more thing"}
    lore.session(KEY).append([later])
    recover_interrupted(lore, min_age=0)  # the orphan archive belongs to the live session: kept
    entry = close_session(lore, KEY)
    assert entry is not None and entry.session_id == old_id
    messages, _ = lore.sessions.archive.read_messages(entry)
    assert messages == [*MESSAGES, later]
    assert len(list((lore.config.sessions_dir / "archive").glob("*.jsonl"))) == 1


def test_an_archive_whose_session_moved_on_is_indexed_by_recovery(lore: Runtime) -> None:
    session = lore.session(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close_session(lore, KEY, fault=_crash_at("archive_written"))
    lore.session(KEY).reset()  # e.g. the live file was lost: the archive is the only copy
    recover_interrupted(lore, min_age=0)
    (entry,) = lore.sessions.archive.entries()
    assert entry.session_id == old_id
    assert lore.sessions.archive.read_messages(entry)[0] == MESSAGES


async def test_chat_start_recovers_before_checking_idleness(lore: Runtime) -> None:
    session = lore.session(KEY)
    session.append(MESSAGES)
    old_id = session.meta.session_id
    with pytest.raises(Crash):
        close_session(lore, KEY, fault=_crash_at("index_written"))
    stray = lore.config.sessions_dir / "archive" / ".stray.jsonl.tmp"
    stray.write_text("{")
    os.utime(stray, (0, 0))  # left by a crash long ago
    await close_if_idle(lore, KEY)
    await lore.background.cancel_all()  # the summary it scheduled is not under test here
    assert lore.session(KEY).meta.session_id != old_id
    assert list((lore.config.sessions_dir / "archive").glob(".*.tmp")) == []


def test_recovery_leaves_a_close_in_progress_alone(lore: Runtime) -> None:
    in_progress = lore.config.sessions_dir / "archive" / ".2026-11-30-1700-x--abcd1234.jsonl.tmp"
    in_progress.parent.mkdir(parents=True)
    in_progress.write_text("{")
    recover_interrupted(lore)
    assert in_progress.exists()
