"""The live session file: append-only, fsynced, locked, tolerant of torn lines."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lore.backends.local.live import META_WIDTH, LiveSession
from lore.keys import key_to_filename
from lore.messages import content_text


def test_new_session_file_starts_with_metadata_line(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "cli:default")
    first = session.path.read_bytes().split(b"\n", 1)[0]
    meta = json.loads(first)
    assert meta["_type"] == "metadata"
    assert meta["key"] == "cli:default"
    assert meta["last_consolidated"] == 0
    assert len(first) + 1 == META_WIDTH
    assert session.meta.session_id == meta["session_id"]


def test_messages_survive_reopening(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "cli:default")
    session.append([{"role": "user", "content": "我住在花莲"}])
    session.append([{"role": "assistant", "content": "好的"}])
    again = LiveSession(tmp_path, "cli:default")
    assert [m["content"] for m in again.messages] == ["我住在花莲", "好的"]
    assert again.meta.session_id == session.meta.session_id


def test_append_never_rewrites_earlier_bytes(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "k")
    session.append([{"role": "user", "content": "one"}])
    before = session.path.read_bytes()
    session.append([{"role": "user", "content": "two"}])
    after = session.path.read_bytes()
    # Only the padded metadata line may change in place; the rest is a pure append.
    assert after[META_WIDTH:].startswith(before[META_WIDTH:])


def test_metadata_updates_in_place(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "k")
    session.append([{"role": "user", "content": "hi"}])
    size = session.path.stat().st_size
    session.update_meta(last_consolidated=1)
    assert session.path.stat().st_size == size
    assert LiveSession(tmp_path, "k").meta.last_consolidated == 1


def test_oversized_metadata_is_rewritten_without_losing_messages(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "k")
    session.append([{"role": "user", "content": "keep me"}])
    session.update_meta(extra={"summary": "x" * 3000})
    again = LiveSession(tmp_path, "k")
    assert again.meta.extra["summary"] == "x" * 3000
    assert [m["content"] for m in again.messages] == ["keep me"]
    again.append([{"role": "assistant", "content": "and me"}])
    assert len(LiveSession(tmp_path, "k").messages) == 2


def test_corrupt_line_is_skipped_and_others_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = LiveSession(tmp_path, "k")
    session.append([{"role": "user", "content": "first"}])
    with session.path.open("ab") as f:
        f.write(b'{"role": "assistant", "content": "tru\n')
    session.append([{"role": "user", "content": "second"}])
    again = LiveSession(tmp_path, "k")
    assert [m["content"] for m in again.messages] == ["first", "second"]
    assert "corrupt" in caplog.text


def test_torn_last_line_is_kept_apart_from_the_next_append(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "k")
    session.append([{"role": "user", "content": "first"}])
    with session.path.open("ab") as f:
        f.write(b'{"role": "assistant", "con')  # a crash mid-write: no newline
    reopened = LiveSession(tmp_path, "k")
    assert [m["content"] for m in reopened.messages] == ["first"]
    reopened.append([{"role": "user", "content": "after crash"}])
    assert [m["content"] for m in LiveSession(tmp_path, "k").messages] == [
        "first",
        "after crash",
    ]


def test_refresh_sees_lines_another_writer_appended(tmp_path: Path) -> None:
    reader = LiveSession(tmp_path, "k")
    writer = LiveSession(tmp_path, "k")
    writer.append([{"role": "user", "content": "from elsewhere"}])
    reader.refresh()
    assert [m["content"] for m in reader.messages] == ["from elsewhere"]


def test_reset_starts_a_new_session_id(tmp_path: Path) -> None:
    session = LiveSession(tmp_path, "k")
    session.append([{"role": "user", "content": "old"}])
    old_id = session.meta.session_id
    session.reset()
    assert session.messages == []
    assert session.meta.session_id != old_id


def test_keys_map_to_distinct_safe_file_names() -> None:
    names = {key_to_filename(k) for k in ["a:b", "a_b", "a/b", "a%3Ab", "../x", ".hidden", "群:家"]}
    assert len(names) == 7
    for name in names:
        assert "/" not in name and "\\" not in name
        assert not name.startswith(".")
    assert key_to_filename("a:b") != key_to_filename("a_b")
    long = key_to_filename("x" * 1000)
    assert len(long) < 200 and long != key_to_filename("x" * 999)


def _hammer(directory: str, tag: str, count: int) -> None:
    session = LiveSession(Path(directory), "shared")
    for i in range(count):
        session.append([{"role": "user", "content": f"{tag}-{i}-" + "x" * 2000}])


def test_two_processes_appending_never_interleave_lines(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_hammer, args=(str(tmp_path), tag, 60)) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    lines = (tmp_path / key_to_filename("shared")).read_bytes().splitlines()[1:]
    parsed = [json.loads(line) for line in lines]
    assert len(parsed) == 120
    for tag in "ab":
        mine = [m["content"].split("-")[1] for m in parsed if m["content"].startswith(tag)]
        assert mine == [str(i) for i in range(60)]


def test_killing_a_writer_mid_run_leaves_every_earlier_message_readable(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from lore.backends.local.live import LiveSession
        s = LiveSession(Path({str(tmp_path)!r}), "victim")
        i = 0
        while True:
            s.append([{{"role": "user", "content": f"msg-{{i}}-" + "y" * 5000}}])
            if i == 20:
                print("ready", flush=True)
            i += 1
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    session = LiveSession(tmp_path, "victim")
    numbers = [int(content_text(m["content"]).split("-")[1]) for m in session.messages]
    assert len(numbers) >= 21
    assert numbers == list(range(len(numbers)))


def test_lock_files_stay_out_of_the_sessions_directory(tmp_path: Path) -> None:
    for key in ("cli:default", "telegram:42", "line:group:家族"):
        LiveSession(tmp_path, key).append([{"role": "user", "content": "hi"}])
    assert not list(tmp_path.glob("*.lock"))
    assert len(list((tmp_path / ".locks").glob("*.lock"))) == 3
