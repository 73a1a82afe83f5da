"""A full disk is named as one: one line, "the disk holding LORE_HOME is full; nothing was
changed", never "damaged"; `lore doctor` reports it and repairs nothing while it lasts; a
turn it refuses leaves the user message marked unanswered, and a message it refuses to
store is not stored at all.

SQLite's own SQLITE_FULL is made for real with `PRAGMA max_page_count` (the database
may not grow past the pages it has). A full file system cannot be made without root (a
tiny tmpfs needs a mount), so ENOSPC comes from the one system call that met it: the
`os.write` or `os.statvfs` the file code makes, replaced at that boundary.
"""

from __future__ import annotations

import errno
import io
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lore.channels.terminal import run_once
from lore.cli import main
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime

HOME = "cli:default"
FULL = "lore: the disk holding LORE_HOME is full; nothing was changed"


def _fill_to_the_brim(path: Path) -> int:
    """Let lore.db grow by one page, then fill every byte of room it has left (a table
    of blobs, inserted until SQLITE_FULL); its page count, which it may not grow past."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0]) + 1
        conn.execute(f"PRAGMA max_page_count = {pages}")
        conn.execute("CREATE TABLE brim (filler BLOB)")
        for size in (4096, 512, 64, 8, 1):
            while True:
                try:
                    conn.execute("INSERT INTO brim VALUES (zeroblob(?))", (size,))
                except sqlite3.OperationalError as exc:
                    assert "full" in str(exc)
                    break
        return pages
    finally:
        conn.close()


def _database_cannot_grow(monkeypatch: pytest.MonkeyPatch, pages: int) -> list[bool]:
    """Every new connection to lore.db may not grow it past `pages`, until the switch
    returned is set to False (space freed)."""
    connect = sqlite3.connect
    full = [True]

    def bounded(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(database, *args, **kwargs)
        if full[0] and str(database).endswith("lore.db"):
            conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(sqlite3, "connect", bounded)
    return full


def _writes_under(home: Path, monkeypatch: pytest.MonkeyPatch, *, keep: int = 0) -> None:
    """Writes to files under `home` fail with ENOSPC after `keep` bytes got through."""
    write = os.write
    left = [keep]

    def full(fd: int, data: Any) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(str(home)):
            return write(fd, data)
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done = write(fd, bytes(data)[: left[0]])
        left[0] -= done
        return done

    monkeypatch.setattr(os, "write", full)


def _statvfs_full(monkeypatch: pytest.MonkeyPatch) -> None:
    statvfs: Callable[[Any], os.statvfs_result] = os.statvfs

    def full(path: Any) -> os.statvfs_result:
        real = statvfs(path)
        fields = list(real)
        fields[4] = fields[3] = 0  # f_bfree, f_bavail
        return os.statvfs_result(fields)

    monkeypatch.setattr(os, "statvfs", full)


def test_a_database_that_cannot_grow_is_a_full_disk_not_damage(
    config: Config, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["memory", "add", "The ferry to Green Island leaves at 9"]) == 0
    capsys.readouterr()
    full = _database_cannot_grow(monkeypatch, _fill_to_the_brim(config.db_path))
    for n in range(80):  # the room left inside pages already there goes first
        code = main(["memory", "add", f"Факт {n}: 绿岛的渡轮 " + "ferry " * 60])
        out, err = capsys.readouterr()
        if code:
            break
    assert code == 1
    assert err.splitlines() == [FULL], err
    full[0] = False
    assert main(["memory", "list"]) == 0
    out = capsys.readouterr().out
    assert "Green Island" in out and f"Факт {n}:" not in out


def test_a_new_database_on_a_full_disk_is_not_called_unusable(
    config: Config, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _database_cannot_grow(monkeypatch, pages=1)  # no room for the schema
    assert main(["memory", "list"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [FULL], err


def test_doctor_names_a_full_disk_and_repairs_nothing(
    config: Config, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["memory", "add", "The ferry to Green Island leaves at 9"]) == 0
    capsys.readouterr()
    archive = config.sessions_dir / "archive"
    archive.mkdir(parents=True)
    (archive / "2026-11-30-0900-ferry--0123abcd.jsonl").write_bytes(b"{broken\n")
    before = {p.name: p.read_bytes() for p in config.home.rglob("*") if p.is_file()}
    _statvfs_full(monkeypatch)
    assert main(["doctor", "--repair"]) == 1
    out = capsys.readouterr().out
    assert "the disk holding LORE_HOME is full" in out and "nothing was changed" in out
    assert "rebuilt" not in out and "moved aside" not in out
    after = {p.name: p.read_bytes() for p in config.home.rglob("*") if p.is_file()}
    assert {name: after.get(name) for name in before} == before
    assert not list(config.home.rglob("*damaged*"))


async def test_a_turn_refused_for_a_full_disk_marks_its_message_unanswered(
    lore: Runtime, model: ScriptedProvider
) -> None:
    conn = lore.db.conn
    conn.execute(f"PRAGMA max_page_count = {_fill_to_the_brim(lore.config.db_path)}")
    for n in range(80):  # the room left inside pages already there goes first
        when = "2026-12-01T09:00:00+08:00"
        model.tool_call("set_reminder", {"text": f"ferry {n} " + "绿岛" * 100, "when": when})
        model.reply("Set for 9.")
        out, err = io.StringIO(), io.StringIO()
        code = await run_once(lore, HOME, f"remind me of ferry {n}", out=out, err=err)
        if code:
            break
    assert code == 1 and n > 0
    assert FULL.removeprefix("lore: ") in err.getvalue()
    messages = lore.session(HOME).messages
    refused = [i for i, m in enumerate(messages) if m.get("content") == f"remind me of ferry {n}"]
    assert refused == [len(messages) - 1] or messages[refused[0] + 1 :] != []
    assert messages[refused[0]].get("unanswered") is True
    assert not any(m.get("unanswered") for m in messages[: refused[0]])
    assert not any(m["role"] == "assistant" for m in messages[refused[0] :])
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert len(lore.reminders.list(HOME)) == n


def test_a_message_the_disk_has_no_room_for_is_not_stored_at_all(
    config: Config, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["chat", "-m", "/status"]) == 0  # the conversation's transcript exists
    capsys.readouterr()
    transcript = next(p for p in config.sessions_dir.glob("*.jsonl"))
    before = transcript.read_bytes()
    _writes_under(config.home, monkeypatch, keep=10)  # ten bytes get through, then ENOSPC
    assert main(["chat", "-m", "Напомни про паром, 明天九点"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == FULL and "Traceback" not in err, err
    assert transcript.read_bytes() == before  # not half a line
